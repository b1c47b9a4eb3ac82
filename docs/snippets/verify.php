<?php
// Verifying payd callbacks in PHP 8 (no dependencies).

// X-Signature is "sha256=" + Base64(HMAC-SHA256(key, body + "." + timestamp)).
function payd_header_ok(string $key, string $body, string $timestamp, string $xSignature): bool {
    $mac = base64_encode(hash_hmac('sha256', $body . '.' . $timestamp, $key, true));
    return hash_equals('sha256=' . $mac, $xSignature);
}

// The "signature" of QR, RTP and refund callbacks, over body.result. The
// body is decoded with JSON_BIGINT_AS_STRING and numbers rendered with two
// decimals.
function payd_body_signature(string $key, array $result): string {
    $values = [];
    foreach ($result as $name => $v) {
        if ($v === null) continue;
        if (is_int($v) || is_float($v)) $v = number_format($v, 2, '.', '');
        if (trim((string)$v) === '') continue;
        $values[$name] = (string)$v;
    }
    uksort($values, fn($a, $b) => strcmp(strtolower($a), strtolower($b)));
    return base64_encode(hash('sha256', implode(':', $values) . ':' . $key, true));
}

function payd_verify(string $key, string $body, string $timestamp, string $xSignature): array {
    if (!payd_header_ok($key, $body, $timestamp, $xSignature)) throw new Exception('X-Signature does not match');
    $parsed = json_decode($body, true, 512, JSON_THROW_ON_ERROR | JSON_BIGINT_AS_STRING);
    if (is_array($parsed) && array_key_exists('result', $parsed)
        && !hash_equals(payd_body_signature($key, $parsed['result']), (string)($parsed['signature'] ?? ''))) {
        throw new Exception('body signature does not match');
    }
    return $parsed;
}

if (isset($argv[1])) {
    $vectors = json_decode(file_get_contents($argv[1]), true);
    foreach ($vectors as $v) {
        if ($v['event'] === '') { // H1: a bare HMAC vector, not a callback body
            if (!payd_header_ok($v['key'], $v['body'], (string)$v['timestamp'], $v['xSignature'])) exit($v['name'] . ": HMAC differs\n");
            continue;
        }
        $parsed = payd_verify($v['key'], $v['body'], (string)$v['timestamp'], $v['xSignature']);
        if (!empty($v['bodySignature']) && $parsed['signature'] !== $v['bodySignature']) exit($v['name'] . ": body signature differs\n");
        try { payd_verify('another-key', $v['body'], (string)$v['timestamp'], $v['xSignature']); exit($v['name'] . ": verified under another key\n"); }
        catch (Exception $e) {}
    }
    echo "php: " . count($vectors) . " vectors verified\n";
}
