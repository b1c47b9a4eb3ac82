// Verifying payd callbacks in Node.js (no dependencies).
const crypto = require("crypto");

// X-Signature is "sha256=" + Base64(HMAC-SHA256(key, body + "." + timestamp)).
function headerOk(key, body, timestamp, xSignature) {
  const mac = crypto.createHmac("sha256", key).update(Buffer.concat([body, Buffer.from("." + timestamp)])).digest("base64");
  const want = Buffer.from("sha256=" + mac), got = Buffer.from(xSignature || "");
  return want.length === got.length && crypto.timingSafeEqual(want, got);
}

// The "signature" of QR, RTP and refund callbacks, over body.result.
function bodySignature(key, result) {
  const values = {};
  for (const [name, v] of Object.entries(result)) {
    if (v === null) continue;
    const s = typeof v === "number" ? v.toFixed(2) : String(v); // amounts with exactly two decimals
    if (s.trim() === "") continue;
    values[name] = s;
  }
  const names = Object.keys(values).sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : a.toLowerCase() > b.toLowerCase() ? 1 : 0));
  const text = names.map((n) => values[n]).join(":") + ":" + key;
  return crypto.createHash("sha256").update(text, "utf8").digest("base64");
}

// verify returns the parsed body of a genuine callback, or throws.
function verify(key, body, timestamp, xSignature) {
  if (!headerOk(key, body, timestamp, xSignature)) throw new Error("X-Signature does not match");
  const parsed = JSON.parse(body.toString("utf8"));
  if (parsed && parsed.result !== undefined && bodySignature(key, parsed.result) !== parsed.signature) {
    throw new Error("body signature does not match");
  }
  return parsed;
}

module.exports = { verify, headerOk, bodySignature };

if (require.main === module) {
  const vectors = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
  for (const v of vectors) {
    const body = Buffer.from(v.body, "utf8");
    if (!v.event) { // H1: a bare HMAC vector, not a callback body
      if (!headerOk(v.key, body, String(v.timestamp), v.xSignature)) throw new Error(v.name + ": HMAC differs");
      continue;
    }
    const parsed = verify(v.key, body, String(v.timestamp), v.xSignature);
    if (v.bodySignature && parsed.signature !== v.bodySignature) throw new Error(v.name + ": body signature differs");
    let refused = false;
    try { verify("another-key", body, String(v.timestamp), v.xSignature); } catch (e) { refused = true; }
    if (!refused) throw new Error(v.name + ": verified under another key");
  }
  console.log(`node: ${vectors.length} vectors verified`);
}
