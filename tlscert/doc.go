// Package tlscert serves a TLS certificate from a pair of PEM files and
// loads the pair again when the files change, so that a renewed
// certificate (certbot, cert-manager, a mounted Secret) is served without
// a restart and without dropping the sessions already open.
//
// The files are looked at lazily: a handshake that finds the last look
// older than Config.CheckInterval stats both files, and loads them again
// when the modification time or size of either differs from the pair
// being served. An idle server does no work; a busy one does two stat
// calls per interval. A pair that fails to load (a key written before its
// certificate, a truncated file) leaves the previous certificate in
// service and is tried again at the next look, with one log line per
// failing change rather than one per handshake.
package tlscert
