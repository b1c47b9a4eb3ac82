# Verifying payd callbacks in Python 3 (standard library only).
import base64, hashlib, hmac, json
from decimal import Decimal

def header_ok(key: str, body: bytes, timestamp: str, x_signature: str) -> bool:
    """X-Signature is "sha256=" + Base64(HMAC-SHA256(key, body + "." + timestamp))."""
    mac = hmac.new(key.encode(), body + b"." + timestamp.encode(), hashlib.sha256).digest()
    return hmac.compare_digest("sha256=" + base64.b64encode(mac).decode(), x_signature)

def body_signature(key: str, result: dict) -> str:
    """The "signature" of QR, RTP and refund callbacks, over body["result"]."""
    values = {}
    for name, v in result.items():
        if v is None:
            continue
        if isinstance(v, Decimal):
            v = f"{v:.2f}"              # amounts with exactly two decimals
        if isinstance(v, str) and v.strip() == "":
            continue
        values[name] = str(v)
    text = ":".join(values[n] for n in sorted(values, key=str.lower)) + ":" + key
    return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

def verify(key: str, body: bytes, timestamp: str, x_signature: str) -> dict:
    """Returns the parsed body of a genuine callback; raises ValueError otherwise."""
    if not header_ok(key, body, timestamp, x_signature):
        raise ValueError("X-Signature does not match")
    parsed = json.loads(body, parse_float=Decimal, parse_int=Decimal)
    if isinstance(parsed, dict) and "result" in parsed:   # QR, RTP and refund callbacks
        if not hmac.compare_digest(body_signature(key, parsed["result"]), parsed.get("signature", "")):
            raise ValueError("body signature does not match")
    return parsed

if __name__ == "__main__":
    import sys
    vectors = json.load(open(sys.argv[1]))
    for v in vectors:
        body = v["body"].encode()
        if not v["event"]:  # H1: a bare HMAC vector, not a callback body
            assert header_ok(v["key"], body, str(v["timestamp"]), v["xSignature"]), v["name"]
            continue
        parsed = verify(v["key"], body, str(v["timestamp"]), v["xSignature"])
        if v.get("bodySignature") and parsed["signature"] != v["bodySignature"]:
            raise SystemExit(f"{v['name']}: body signature differs")
        try:
            verify("another-key", body, str(v["timestamp"]), v["xSignature"])
            raise SystemExit(f"{v['name']}: verified under another key")
        except ValueError:
            pass
    print(f"python: {len(vectors)} vectors verified")
