package core

import (
	"fmt"
	"net"
)

// URLHost renders a listen address for a URL: an unspecified address
// (0.0.0.0, [::]) becomes IPv4 loopback, the one address every client can
// reach on a dual-stack listener.
func URLHost(a *net.TCPAddr) string {
	if a.IP == nil || a.IP.IsUnspecified() {
		return fmt.Sprintf("127.0.0.1:%d", a.Port)
	}
	return net.JoinHostPort(a.IP.String(), fmt.Sprint(a.Port))
}
