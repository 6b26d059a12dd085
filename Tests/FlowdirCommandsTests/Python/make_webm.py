#!/usr/bin/env python3
"""Writes a seekable WebM without an encoder: Opus audio of silence (each
packet a TOC byte with an empty 20 ms frame, which a decoder plays as
silence), a Duration and Cues, and Void padding between one-second
clusters so that a seek near the end lands megabytes in and the browser has
to ask for that part (HTTP Range).

usage: make_webm.py OUT [SECONDS] [PADDING_PER_SECOND]
"""
import struct, sys


def size(n):
    return b"\x01" + n.to_bytes(7, "big")  # an 8-byte EBML size: simple, and always valid


def el(eid, payload):
    return bytes.fromhex(eid) + size(len(payload)) + payload


def uint(eid, n):
    return el(eid, n.to_bytes(max(1, (n.bit_length() + 7) // 8), "big"))


def flt(eid, x):
    return el(eid, struct.pack(">d", x))


def webm(seconds=60, padding=128 << 10):
    header = el("1A45DFA3", uint("4286", 1) + uint("42F7", 1) + uint("42F2", 4) + uint("42F3", 8) + el("4282", b"webm")
                + uint("4287", 4) + uint("4285", 2))
    info = el("1549A966", uint("2AD7B1", 1_000_000) + el("4D80", b"flowdir-test") + el("5741", b"flowdir-test")
              + flt("4489", seconds * 1000.0))
    opus_head = b"OpusHead" + bytes([1, 1]) + struct.pack("<H", 312) + struct.pack("<I", 48000) + struct.pack("<h", 0) + bytes([0])
    track = el("AE", uint("D7", 1) + uint("73C5", 1) + uint("83", 2) + el("86", b"A_OPUS") + el("63A2", opus_head)
               + uint("56AA", 6_500_000) + uint("56BB", 80_000_000) + el("E1", flt("B5", 48000.0) + uint("9F", 1)))
    tracks = el("1654AE6B", track)
    packet = bytes([0xF8])  # config 31 (CELT, fullband, 20 ms), one frame, of no bytes
    clusters = []
    for s in range(seconds):
        blocks = b"".join(el("A3", b"\x81" + struct.pack(">h", i * 20) + b"\x80" + packet) for i in range(50))
        clusters.append(el("1F43B675", uint("E7", s * 1000) + blocks) + el("EC", bytes(padding)))

    def cues(base):
        points, at = b"", base
        for s, c in enumerate(clusters):
            # Fixed-width numbers: the cues are as long whatever the positions.
            points += el("BB", el("B3", (s * 1000).to_bytes(8, "big")) + el("B7", uint("F7", 1) + el("F1", at.to_bytes(8, "big"))))
            at += len(c)
        return el("1C53BB6B", points)

    # Cues before the clusters (read with the header, no SeekHead needed); their
    # positions are from the segment's data, so measured with the cues in place.
    head = info + tracks
    first = len(head) + len(cues(0))
    body = head + cues(first) + b"".join(clusters)
    return header + el("18538067", body)


if __name__ == "__main__":
    out = sys.argv[1]
    seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    padding = int(sys.argv[3]) if len(sys.argv) > 3 else 128 << 10
    with open(out, "wb") as f:
        f.write(webm(seconds, padding))
