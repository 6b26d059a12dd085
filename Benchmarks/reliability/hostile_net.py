"""HTTP as hostile.py sends it: well-formed requests with any headers, and raw bytes."""
import base64, http.client, itertools, json, socket, time

# Wrong tokens are throttled per client address: each hostile request comes
# from its own loopback address, so the throttle never holds off the checks.
_sources = itertools.cycle(f"127.0.{i}.{j}" for i in range(1, 250) for j in range(2, 250))


def next_source():
    return next(_sources)


def b64(s):
    return base64.b64encode(s.encode() if isinstance(s, str) else s).decode()


def wait_for(f, seconds):
    end = time.time() + seconds
    while time.time() < end:
        v = f()
        if v:
            return v
        time.sleep(0.1)
    return None


class Http:
    def __init__(self, port):
        self.port = port

    def request(self, method, path, headers=None, body=None, source=None, timeout=30):
        """(status, [(header, value)], body) — status is a string saying why when there was no answer."""
        headers = dict(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout,
                                       source_address=(source, 0) if source else None)
        try:
            c.putrequest(method, path, skip_host="Host" in headers, skip_accept_encoding=True)
            for k, v in headers.items():
                c.putheader(k, v.encode() if isinstance(v, str) else v)
            if body is not None and "Content-Length" not in headers and "Transfer-Encoding" not in headers:
                c.putheader("Content-Length", str(len(body)))
            c.endheaders(body)
            r = c.getresponse()
            data = r.read()
            return r.status, r.getheaders(), data
        except (OSError, http.client.HTTPException) as e:
            return f"no answer ({type(e).__name__})", [], b""
        finally:
            c.close()

    def raw(self, data, read=True, timeout=10, source=None):
        """Sends bytes as they are; what came back (as much as came within `timeout`)."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout,
                                     source_address=(source, 0) if source else None)
        got = b""
        try:
            s.sendall(data)
            if read:
                s.shutdown(socket.SHUT_WR)
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    got += chunk
        except OSError:
            pass
        finally:
            s.close()
        return got

    def hold(self, data, n):
        """`n` connections that each send `data` (an unfinished request) and stay open; close them with close_all."""
        socks = []
        for _ in range(n):
            try:
                s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                s.sendall(data)
                socks.append(s)
            except OSError:
                break
        return socks


def close_all(socks):
    for s in socks:
        try:
            s.close()
        except OSError:
            pass
