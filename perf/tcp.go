package perf

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/openmrc/mrc/internal/host/pages"
)

// The kernel-TCP baseline: the client writes the same chunks of the same
// pattern on the control connection, and the server reads each into its
// ring slot and checks it, so both transports do the same work per byte.

// tcpServe is the server's side of the baseline; a client that sends
// nothing for idle ends it.
func tcpServe(ctx context.Context, conn net.Conn, lc *lineConn, h hello, idle time.Duration) (ServerReport, error) {
	region := pages.Mapped(h.Chunk * h.RingChunks) // as the MRC server's, before ready
	pat := pattern(h.Seed, h.Chunk*(h.RingChunks+1))
	if err := lc.send(ready{}); err != nil {
		return ServerReport{}, err
	}
	// The line reader may have buffered the first bytes of data.
	r := lc.rest()
	var rep ServerReport
	for k := int64(0); h.Bytes == 0 || rep.Bytes < h.Bytes; k++ {
		n := chunkLen(k, h.Bytes, h.Chunk)
		src, dst := slots(k, h.RingChunks, h.Chunk)
		conn.SetReadDeadline(time.Now().Add(idle))
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		m, err := io.ReadFull(r, region[dst:dst+n])
		if err == io.EOF && h.Bytes == 0 {
			break // the client stopped after a whole chunk
		}
		if err != nil {
			rep.Error = fmt.Sprintf("chunk %d: read %d of %d bytes: %v", k, m, n, err)
			break
		}
		rep.Chunks++
		rep.Checked++
		rep.Bytes += int64(n)
		if !bytes.Equal(region[dst:dst+n], pat[src:src+n]) {
			rep.Mismatch++
		}
	}
	rep.Verified = rep.Error == "" && rep.Mismatch == 0 && rep.Chunks > 0
	return rep, lc.send(rep)
}

// runTCP is Run's kernel-TCP baseline.
func runTCP(ctx context.Context, cfg ClientConfig, conn *net.TCPConn, lc *lineConn) (*Result, error) {
	h := hello{Version: Version, Planes: 1, Chunk: cfg.Chunk, RingChunks: cfg.RingChunks, Bytes: cfg.Bytes, Seed: cfg.Seed, TCP: true}
	if _, err := handshake(conn, lc, h); err != nil {
		return nil, err
	}
	pat := pattern(cfg.Seed, cfg.Chunk*(cfg.RingChunks+1))
	var end time.Time
	if cfg.Duration > 0 {
		end = time.Now().Add(cfg.Duration)
	}
	res := &Result{Config: cfg}
	start := time.Now()
	res.StartUnix = start.UnixNano()
	lastProgress := start
	for k := int64(0); ; k++ {
		if cfg.Bytes > 0 && res.Bytes >= cfg.Bytes || cfg.Duration > 0 && time.Now().After(end) {
			break
		}
		if err := ctx.Err(); err != nil {
			res.Seconds, res.Interrupted = time.Since(start).Seconds(), true
			res.Gbps = float64(res.Bytes) * 8 / res.Seconds / 1e9
			return res, err
		}
		if cfg.Progress != nil && time.Since(lastProgress) >= time.Second {
			lastProgress = time.Now()
			cfg.Progress(Progress{Bytes: res.Bytes, Total: cfg.Bytes, Elapsed: time.Since(start)})
		}
		n := chunkLen(k, cfg.Bytes, cfg.Chunk)
		src, _ := slots(k, cfg.RingChunks, cfg.Chunk)
		if _, err := conn.Write(pat[src : src+n]); err != nil {
			if ctx.Err() != nil {
				res.Seconds, res.Interrupted = time.Since(start).Seconds(), true
				return res, ctx.Err()
			}
			return res, fmt.Errorf("tcp: %w", err)
		}
		res.Bytes += int64(n)
		res.Chunks++
	}
	conn.CloseWrite()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	var rep ServerReport
	if err := lc.recv(&rep); err != nil {
		return res, err
	}
	// The transfer ends when the server has checked the last byte.
	res.Seconds = time.Since(start).Seconds()
	res.Gbps = float64(res.Bytes) * 8 / res.Seconds / 1e9
	res.Server, res.Verified = rep, rep.Verified && rep.Bytes == res.Bytes
	if rep.Error != "" {
		return res, fmt.Errorf("server: %s", rep.Error)
	}
	if !res.Verified {
		return res, fmt.Errorf("verification failed: %d of %d chunks differ, %d of %d bytes arrived", rep.Mismatch, rep.Chunks, rep.Bytes, res.Bytes)
	}
	return res, nil
}
