/// Text from outside (a file name, a reason, a title) made safe where
/// flowdir writes it for people and tools to read line by line: commit
/// messages (a line break in a subject would make a trailer of what
/// follows), `inbox/<node>.error.txt`, comments in the files it writes.
public enum PlainText {
    /// On one line: every control character — line breaks and tabs too —
    /// as `cat -v` shows it (`^J`, `^[`, `^?`), and C1 controls and the
    /// Unicode ones that break or reorder a line as `<U+2028>`; cut at
    /// `limit` characters with `…`.
    public static func oneLine(_ text: String, limit: Int? = nil) -> String {
        var out = escapingControls(text, keepingLineBreaks: false)
        // Counted in bytes first: a long group commit's subject is not walked by Character for nothing.
        if let limit, out.utf8.count > limit, out.count > limit { out = String(out.prefix(max(0, limit - 1))) + "…" }
        return out
    }

    /// The same, but `\n` and tabs kept: several lines, none of them
    /// carrying an escape sequence, a carriage return or the like.
    public static func lines(_ text: String) -> String {
        escapingControls(text, keepingLineBreaks: true)
    }

    public static func escapingControls(_ text: String, keepingLineBreaks: Bool = false) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = String.UnicodeScalarView()
        for c in text.unicodeScalars {
            if !isControl(c) || keepingLineBreaks && (c == "\n" || c == "\t") {
                out.append(c)
            } else if c.value < 0x20 || c.value == 0x7F {
                out.append("^")
                out.append(Unicode.Scalar(UInt8(c.value == 0x7F ? 0x3F : c.value + 0x40)))
            } else {
                let hex = String(c.value, radix: 16, uppercase: true)
                out.append(contentsOf: "<U+\(String(repeating: "0", count: max(0, 4 - hex.count)) + hex)>".unicodeScalars)
            }
        }
        return String(out)
    }

    /// C0 and C1 controls, DEL, the Unicode line and paragraph separators,
    /// and the bidirectional embeddings, overrides and isolates.
    public static func isControl(_ c: Unicode.Scalar) -> Bool {
        c.value < 0x20 || (0x7F...0x9F).contains(c.value) || c.value == 0x2028 || c.value == 0x2029
            || (0x202A...0x202E).contains(c.value) || (0x2066...0x2069).contains(c.value)
    }
}
