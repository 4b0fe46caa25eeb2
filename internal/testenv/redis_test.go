package testenv

import (
	"net"
	"strings"
	"testing"
)

func TestStartRedisPingAndRestart(t *testing.T) {
	r := StartRedis(t, RedisOptions{Persist: true})
	ping := func() string {
		c, err := net.Dial("tcp", r.Addr)
		if err != nil {
			return err.Error()
		}
		defer c.Close()
		c.Write([]byte("PING\r\n"))
		buf := make([]byte, 16)
		n, _ := c.Read(buf)
		return string(buf[:n])
	}
	if got := ping(); !strings.HasPrefix(got, "+PONG") {
		t.Fatalf("ping: %q", got)
	}
	r.Kill()
	if got := ping(); strings.HasPrefix(got, "+PONG") {
		t.Fatal("killed server still answers")
	}
	r.Restart()
	if got := ping(); !strings.HasPrefix(got, "+PONG") {
		t.Fatalf("ping after restart: %q", got)
	}
}
