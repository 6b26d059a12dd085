/// A job's log as a person reads it on one line each: the end of a failed
/// run's reason (`exited with code 3: <its last line>`) and the tail that
/// `flowdir show` prints. A tool's colours and cursor moves are taken out,
/// since they would reach state.yaml and the terminal as they are.
public enum LogLines {
    /// The last `count` lines of `bytes` worth showing. Lines end at a line
    /// feed (a byte: CRLF ends one too); escape sequences are dropped and
    /// other control characters but tabs become spaces; blank lines and
    /// `progress:` lines (which flowdir reads itself) are left out. Each
    /// line is cut at `width` characters, with "…".
    public static func last(_ count: Int, of bytes: [UInt8], width: Int = 160) -> [String] {
        var kept: [String] = []
        var end = bytes.count
        // From the end back: only the lines shown are cleaned.
        while kept.count < count, end > 0 {
            let start = bytes[..<end].lastIndex(of: 10).map { $0 + 1 } ?? 0
            let line = clean(bytes[start..<end]).trimmed()
            if !line.isEmpty, !line.hasPrefix("progress:") {
                kept.append(line.count > width ? String(line.prefix(width - 1)) + "…" : line)
            }
            end = start - 1
        }
        return kept.reversed()
    }

    /// Without escape sequences (`ESC [ … final`, `ESC ] … BEL`, and
    /// `ESC` with one character), other control characters but tabs as spaces.
    static func clean(_ line: ArraySlice<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(line.count)
        var i = line.startIndex
        func next() -> UInt8? {
            guard i < line.endIndex else { return nil }
            defer { line.formIndex(after: &i) }
            return line[i]
        }
        while let b = next() {
            switch b {
            case 0x1B:
                switch next() {
                case 0x5B?:  // CSI: parameters and intermediates, then a final byte 0x40–0x7E
                    while let c = next(), !(0x40...0x7E).contains(c) {}
                case 0x5D?:  // OSC: up to BEL or ESC \
                    while let c = next() {
                        if c == 0x07 { break }
                        if c == 0x1B { _ = next(); break }
                    }
                default:
                    break
                }
            case 9:
                out.append(9)
            case 0..<0x20, 0x7F:
                out.append(0x20)
            default:
                out.append(b)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
