package devcluster

import "net"

// probeFree binds the address for a moment to see whether it is taken.
func probeFree(l listenAddr) error {
	if l.network == "udp" {
		pc, err := net.ListenPacket("udp", l.addr)
		if err != nil {
			return err
		}
		return pc.Close()
	}
	ln, err := net.Listen("tcp", l.addr)
	if err != nil {
		return err
	}
	return ln.Close()
}
