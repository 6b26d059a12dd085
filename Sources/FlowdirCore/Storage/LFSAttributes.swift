/// The lines of an instance's `.gitattributes` that mark large files
/// (docs/storage.md): one per path committed as a Git LFS pointer,
///
///     nodes/stylize1/out/image.png filter=lfs diff=lfs merge=lfs -text
///
/// so git (and git-lfs) treat exactly those paths as pointers. One line
/// a path, never a pattern: a small output at the same path another run
/// made large is an ordinary blob, and must not go through the filter.
/// A person's own lines are kept as they are.
public enum LFSAttributes {
    public static let path = ".gitattributes"
    static let suffix = " filter=lfs diff=lfs merge=lfs -text"

    /// The paths `text` marks, one line each (flowdir's lines only).
    public static func paths(in text: String) -> Set<String> {
        Set(lines(text).compactMap(markedPath))
    }

    /// The lines of `text`, split at each line feed byte: as Characters,
    /// "\r\n" is one, and two lines would run together.
    static func lines(_ text: String) -> [String] {
        text.utf8.split(separator: 0x0A, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The path a line of flowdir's marks; nil for any other line. By bytes.
    static func markedPath(_ line: String) -> String? {
        let u = Array(line.utf8), tail = Array(suffix.utf8)
        guard u.count > tail.count, u.suffix(tail.count).elementsEqual(tail) else { return nil }
        return unescape(String(decoding: u.dropLast(tail.count), as: UTF8.self))
    }

    /// `text` marking exactly `paths` as large files (and keeping every
    /// other line), or nil when it already does.
    public static func text(_ text: String, marking paths: Set<String>) -> String? {
        // A line break cannot be in a line: such a path (never one of flowdir's
        // checked names) is not marked rather than written as two lines.
        let paths = paths.filter { !$0.utf8.contains(0x0A) && !$0.utf8.contains(0x0D) }
        guard Self.paths(in: text) != paths || hasStrayLines(text, paths) else { return nil }
        var kept = lines(text)
        if kept.last == "" { kept.removeLast() }
        kept.removeAll { markedPath($0) != nil }
        var lines = kept
        if lines.isEmpty || !lines.contains(header) {
            if !lines.isEmpty, lines.last != "" { lines.append("") }
            lines.append(header)
        }
        lines += paths.sorted().map { escape($0) + suffix }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Lines sending files through Git LFS's filter that are not flowdir's
    /// one-path lines (a person's pattern such as `*.txt filter=lfs …`):
    /// git would make pointers of files flowdir commits as they are.
    public static func foreignLines(in text: String) -> [String] {
        lines(text).filter { line in
            guard !line.hasPrefix("#"), line.contains("filter=lfs") else { return false }
            return markedPath(line) == nil
        }
    }

    /// The line that marks `path` (what a person removed, to put back).
    public static func line(for path: String) -> String { escape(path) + suffix }

    /// The comment above flowdir's lines.
    static let header = "# Large files, kept as Git LFS pointers (flowdir writes these lines)"

    /// A line for the same path twice, or one with the wrong spelling.
    static func hasStrayLines(_ text: String, _ paths: Set<String>) -> Bool {
        var seen = Set<String>()
        for line in lines(text) where line.utf8.count > suffix.utf8.count && line.utf8.suffix(suffix.utf8.count).elementsEqual(suffix.utf8) {
            guard let p = markedPath(line), seen.insert(p).inserted else { return true }
        }
        return false
    }

    /// A path as a gitattributes pattern matching only itself: anchored
    /// with a leading `/`, glob characters escaped; a path with blanks or
    /// quotes in C-style quotes (git reads both).
    public static func escape(_ path: String) -> String {
        // By Unicode scalars throughout: a path opening with a combining mark
        // would make one Character with the `/` put before it.
        var out = String.UnicodeScalarView()
        out.append("/")  // anchored at the top: `/` first (so no `#` or `!` can lead it)
        for c in path.unicodeScalars {
            switch c {
            case "*", "?", "[", "]", "\\": out.append("\\"); out.append(c)
            default: out.append(c)
            }
        }
        guard out.contains(where: { $0 == " " || $0 == "\t" || $0 == "\"" }) else { return String(out) }
        var quoted = String.UnicodeScalarView()
        quoted.append("\"")
        for c in out {
            if c == "\\" || c == "\"" { quoted.append("\\") }
            quoted.append(c)
        }
        quoted.append("\"")
        return String(quoted)
    }

    /// The path a pattern written by `escape` matches; nil for any other pattern.
    static func unescape(_ pattern: String) -> String? {
        var p = Array(pattern.unicodeScalars)
        if p.count >= 2, p.first == "\"", p.last == "\"" {
            var out: [Unicode.Scalar] = [], escaped = false
            for c in p.dropFirst().dropLast() {
                if escaped { out.append(c); escaped = false } else if c == "\\" { escaped = true } else { out.append(c) }
            }
            p = out
        }
        guard p.first == "/" else { return nil }
        var out = String.UnicodeScalarView(), escaped = false
        for c in p.dropFirst() {
            if escaped { out.append(c); escaped = false; continue }
            if c == "\\" { escaped = true; continue }
            if c == "*" || c == "?" || c == "[" { return nil }  // a pattern of the person's, not a path of ours
            out.append(c)
        }
        return escaped || out.isEmpty ? nil : String(out)
    }
}
