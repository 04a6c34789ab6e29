"""The loopback guard for Python children of the tests (pip, Schemathesis, the converters).

test/setup/loopback-only.mjs puts this directory on PYTHONPATH of every process a test starts, so
Python imports this module at start-up. Like the Node guard, it refuses, before any packet leaves,
connects and UDP sends to addresses outside 127.0.0.0/8 and ::1, and name lookups other than
localhost (a lookup asks the system resolver, which is not on loopback). A refusal raises OSError with
a message that starts with "loopback guard:", is printed to stderr, and is appended to
TEST_LOOPBACK_GUARD_LOG when set, which the test runner checks.
"""
import errno
import ipaddress
import os
import socket
import sys
import time

_PREFIX = "loopback guard:"


def _is_loopback(host):
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    host = str(host).strip().strip("[]").split("%", 1)[0]
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _is_loopback_name(host):
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    name = str(host).lower().rstrip(".")
    return name == "localhost" or name.endswith(".localhost")


def _is_ip(host):
    try:
        ipaddress.ip_address(str(host).strip("[]").split("%", 1)[0])
        return True
    except ValueError:
        return False


def _refuse(what):
    message = f"{_PREFIX} refused {what} (test processes may reach only 127.0.0.0/8 and ::1)"
    if os.environ.get("TEST_LOOPBACK_GUARD_EXPECT") != "1":
        sys.stderr.write(message + "\n")
        log = os.environ.get("TEST_LOOPBACK_GUARD_LOG")
        if log:
            try:
                with open(log, "a") as f:
                    f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} pid {os.getpid()} python {' '.join(sys.argv)}: {message}\n")
            except OSError:
                pass
    return OSError(errno.ENETUNREACH, message)


def _check_address(family, address, what):
    if family == getattr(socket, "AF_UNIX", None) or not isinstance(address, tuple):
        return
    host, port = address[0], address[1]
    if _is_loopback(host) or (_is_loopback_name(host)):
        return
    raise _refuse(f"{what} {host}:{port}")


_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex
_sendto = socket.socket.sendto
_getaddrinfo = socket.getaddrinfo
_gethostbyname = socket.gethostbyname
_gethostbyname_ex = socket.gethostbyname_ex


def _guarded_connect(self, address):
    _check_address(self.family, address, "a connection to")
    return _connect(self, address)


def _guarded_connect_ex(self, address):
    _check_address(self.family, address, "a connection to")
    return _connect_ex(self, address)


def _guarded_sendto(self, data, *args):
    address = args[-1]
    _check_address(self.family, address, "a datagram to")
    return _sendto(self, data, *args)


def _guarded_getaddrinfo(host, *args, **kwargs):
    if host not in (None, "", b"") and not _is_ip(host if not isinstance(host, bytes) else host.decode()) and not _is_loopback_name(host):
        raise socket.gaierror(socket.EAI_NONAME, _refuse(f"a DNS lookup of {host!r}").strerror)
    return _getaddrinfo(host, *args, **kwargs)


def _guarded_gethostbyname(host):
    if not _is_ip(host) and not _is_loopback_name(host):
        raise socket.gaierror(socket.EAI_NONAME, _refuse(f"a DNS lookup of {host!r}").strerror)
    return _gethostbyname(host)


def _guarded_gethostbyname_ex(host):
    if not _is_ip(host) and not _is_loopback_name(host):
        raise socket.gaierror(socket.EAI_NONAME, _refuse(f"a DNS lookup of {host!r}").strerror)
    return _gethostbyname_ex(host)


socket.socket.connect = _guarded_connect
socket.socket.connect_ex = _guarded_connect_ex
socket.socket.sendto = _guarded_sendto
socket.getaddrinfo = _guarded_getaddrinfo
socket.gethostbyname = _guarded_gethostbyname
socket.gethostbyname_ex = _guarded_gethostbyname_ex

for _proxy in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
    os.environ.pop(_proxy, None)
