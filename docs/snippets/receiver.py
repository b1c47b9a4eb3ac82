# A callback receiver for trying payd (docs/integrate.md): it verifies each
# callback with verify.py and prints it. Python 3, standard library only.
#   PAYD_SIGNATURE_KEY=… python3 docs/snippets/receiver.py 127.0.0.1 9000
import json, os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verify import verify

KEY = os.environ["PAYD_SIGNATURE_KEY"]

class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            parsed = verify(KEY, body, self.headers.get("X-Signature-Timestamp", ""), self.headers.get("X-Signature", ""))
        except ValueError as e:
            print(f"REFUSED {self.headers.get('X-Callback-Event')}: {e}", flush=True)
            self.send_response(401)
            self.end_headers()
            return
        print(f"verified {self.headers.get('X-Callback-Event')} {self.headers.get('X-Callback-Id')}: "
              + json.dumps(parsed, default=str), flush=True)
        self.send_response(200)  # 200 only once the callback is recorded
        self.end_headers()

    def log_message(self, *args):
        pass

if __name__ == "__main__":
    host, port = (sys.argv[1], int(sys.argv[2])) if len(sys.argv) > 2 else ("127.0.0.1", 9000)
    HTTPServer((host, port), Receiver).serve_forever()
