#!/usr/bin/python3
"""bench/delay.py TARGET_PORT DELAY_MS — a TCP proxy on a free loopback
port that adds DELAY_MS to every round trip (half each way) between its
clients and 127.0.0.1:TARGET_PORT, as a network's latency would: every
piece of data read from one side is written to the other DELAY_MS / 2
after it was read, in order, with no limit on the bytes in flight (a
latency, not a bandwidth).  The bench's stand-in for netem, which this
machine's kernel lacks.  Prints its port on the first line of stdout, then
serves until killed.  Standard library only."""

import heapq
import socket
import sys
import threading
import time


def pump(src, dst, delay):
    """src's bytes to dst, each piece `delay` seconds after it came."""
    queue = []  # (due, seq, bytes or None at the end)
    cv = threading.Condition()
    seq = 0

    def writer():
        while True:
            with cv:
                while not queue or queue[0][0] > time.monotonic():
                    cv.wait(max(0.0, queue[0][0] - time.monotonic()) if queue else None)
                _, _, data = heapq.heappop(queue)
            if data is None:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            try:
                dst.sendall(data)
            except OSError:
                return

    w = threading.Thread(target=writer, daemon=True)
    w.start()
    while True:
        try:
            data = src.recv(1 << 20)
        except OSError:
            data = b""
        with cv:
            seq += 1
            heapq.heappush(queue, (time.monotonic() + delay, seq, data or None))
            cv.notify()
        if not data:
            break
    w.join()


def serve(conn, port, delay):
    try:
        up = socket.create_connection(("127.0.0.1", port))
    except OSError:
        conn.close()
        return
    for s in (conn, up):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    a = threading.Thread(target=pump, args=(conn, up, delay), daemon=True)
    b = threading.Thread(target=pump, args=(up, conn, delay), daemon=True)
    a.start()
    b.start()
    a.join()
    b.join()
    conn.close()
    up.close()


def main():
    port, delay = int(sys.argv[1]), float(sys.argv[2]) / 2e3
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    print(ls.getsockname()[1], flush=True)
    while True:
        conn, _ = ls.accept()
        threading.Thread(target=serve, args=(conn, port, delay), daemon=True).start()


if __name__ == "__main__":
    main()
