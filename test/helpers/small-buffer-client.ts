/**
 * The start of a Python client with a 4 KiB receive buffer (so the router's writes to it are held
 * back by the kernel soon): connects to the port argv[1] and asks for a streamed completion of
 * model `sf-model`. The script that includes it goes on reading from `s`.
 */
export const SMALL_BUFFER_STREAM_REQUEST = `
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(('127.0.0.1', int(sys.argv[1])))
body = b'{"model":"sf-model","prompt":"x","stream":true}'
s.sendall(b'POST /v1/completions HTTP/1.1\\r\\nhost: x\\r\\ncontent-type: application/json\\r\\ncontent-length: '
  + str(len(body)).encode() + b'\\r\\n\\r\\n' + body)
`;
