// Durations (FlowDuration: `PT24H`, `90s`, `10m`), and the other numbers people write in
// flowdir's files: dates (Timestamp's ISO 8601) and sizes (`512MB`). A duration read is
// finite and at least 0, reads the same again, and a moment that far from now can be
// written as a date (an await's `expiresAt` is now + `expiresIn`).
// fuzz-modules: FlowdirCore FlowdirTemplates
// fuzz-seeds: docs:yaml workflows/*.yaml examples/*.yaml
// fuzz-dict: duration
import FlowdirCore
@testable import FlowdirTemplates

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    // Each line is one text; a seed file (a whole template) gives many.
    let text = String(decoding: fuzzBytes(data, size), as: UTF8.self)
    for line in text.split(separator: "\n", omittingEmptySubsequences: false).prefix(64) {
        let word = line.split(separator: ":", maxSplits: 1).last.map { $0.trimmed() } ?? String(line)
        check(String(line))
        if word != line { check(word) }
    }
    return 0
}

func check(_ s: String) {
    if let d = FlowDuration(parsing: s) {
        require(d.seconds.isFinite && d.seconds >= 0, "the duration \(quoted(s)) reads as \(d.seconds) s")
        require(d.text == s.trimmed(), "the duration \(quoted(s)) keeps the text \(quoted(d.text))")
        let again = FlowDuration(parsing: d.text)
        require(again?.seconds == d.seconds, "the duration \(quoted(s)) reads otherwise the second time")
        let expires = Timestamp(seconds: 1_790_000_000) + d.seconds
        require(expires.seconds < 0x1p63, "the duration \(quoted(s)) reads as \(d.seconds) s, beyond any date from now")
        _ = expires.iso8601
    }
    if let t = Timestamp(iso8601: s) {
        require(t.seconds.isFinite, "the date \(quoted(s)) reads as \(t.seconds)")
        // Written in whole seconds, a date reads back as that second.
        let written = t.iso8601
        let back = Timestamp(iso8601: written)
        require(back?.seconds == t.seconds.rounded(.down), "the date \(quoted(s)) is written \(quoted(written)), which reads as \(back.map { "\($0.seconds)" } ?? "nothing")")
    }
    _ = ConfigDecoder.byteSize(.string(s))
}
