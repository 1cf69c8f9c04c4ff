package main

import (
	"github.com/stompgate/stompgate/api"
	"github.com/stompgate/stompgate/server"
)

var (
	_ server.BackendObserver    = observer{}
	_ server.AppBacklogObserver = observer{}
	_ api.Observer              = observer{}
)

func (o observer) AppHandled(result string)          { o.m.AppHandled(result) }
func (o observer) AppRefused(bound string)           { o.m.AppRefused(bound) }
func (o observer) UserDelivered()                    { o.m.UserDelivered() }
func (o observer) APIRequest(endpoint string, c int) { o.m.APIRequest(endpoint, c) }
