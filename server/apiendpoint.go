package server

// The endpoints of the server API (package api), as it reports them to
// its Observer. They are outcome labels like the App results, and live
// here beside them so that metrics labels API requests without importing
// the api adapter: adapters do not import each other.
const (
	APIPublish    = "publish"
	APIDisconnect = "disconnect"
	APISessions   = "sessions"
)
