/// Renders diagnostics as text, the one place that decides how a problem
/// looks to a person:
///
///     bad.yaml:7:20: error[unknownNode]: edge refers to node 'mask2', which does not exist
///      7 |   - { from: [mask2, mask], to: [stylize1, mask] }
///        |              ^
///       hint: did you mean 'mask1'?
public struct DiagnosticRenderer: Sendable {
    public var useColor: Bool
    /// File path → its text, for quoting the offending line.
    public var sources: [String: String]

    public init(sources: [String: String] = [:], useColor: Bool = false) {
        self.sources = sources
        self.useColor = useColor
    }

    public func render(_ diagnostic: Diagnostic) -> String {
        render(diagnostic, line: { file, number in sources[file].flatMap { Self.line(number, of: $0) } })
    }

    /// Each diagnostic's text, in order. Each source is scanned once for
    /// where its lines start (`LineIndex`), however many diagnostics quote
    /// it: 20,000 of them cost the file's size, not 20,000 times it.
    /// `scanned`: the source characters looked at, added to.
    public func renderEach(_ diagnostics: [Diagnostic], scanned: inout Int) -> [String] {
        var indexes: [String: LineIndex] = [:]
        var looked = 0
        let texts = diagnostics.map { d in
            render(d, line: { file, number in
                if indexes[file] == nil, let text = sources[file] {
                    let index = LineIndex(text)
                    looked += index.scanned
                    indexes[file] = index
                }
                return indexes[file]?.line(number)
            })
        }
        scanned += looked
        return texts
    }

    public func renderEach(_ diagnostics: [Diagnostic]) -> [String] {
        var scanned = 0
        return renderEach(diagnostics, scanned: &scanned)
    }

    private func render(_ diagnostic: Diagnostic, line quoted: (String, Int) -> String?) -> String {
        var out = ""
        if let loc = diagnostic.location {
            out += "\(loc.file):\(loc.line):\(loc.column): "
        } else if let file = diagnostic.file {
            out += "\(file): "
        }
        let label = "\(diagnostic.severity.rawValue)[\(diagnostic.code.rawValue)]"
        out += paint(label, diagnostic.severity == .error ? "1;31" : "1;33")
        out += ": " + diagnostic.message
        if let loc = diagnostic.location, let line = quoted(loc.file, loc.line) {
            let number = String(loc.line)
            let gutter = String(repeating: " ", count: number.count)
            out += "\n \(number) | \(line)"
            out += "\n \(gutter) | \(Self.caretPadding(line, column: loc.column))" + paint("^", "1;32")
        }
        if let hint = diagnostic.hint {
            out += "\n  hint: " + hint
        }
        return out
    }

    public func render(_ diagnostics: [Diagnostic]) -> String {
        renderEach(diagnostics).joined(separator: "\n")
    }

    /// Where each line of a text starts, found in one pass.
    public struct LineIndex: Sendable {
        let scalars: String.UnicodeScalarView
        /// The start of line n (1-based) at n - 1.
        let starts: [String.UnicodeScalarView.Index]
        /// Characters looked at to make it: the text's, once.
        public let scanned: Int

        public init(_ text: String) {
            scalars = text.unicodeScalars
            var starts = [scalars.startIndex]
            var n = 0
            var i = scalars.startIndex
            while i < scalars.endIndex {
                let next = scalars.index(after: i)
                if scalars[i] == "\n" { starts.append(next) }
                i = next
                n += 1
            }
            self.starts = starts
            scanned = n
        }

        /// Line `number`, as `DiagnosticRenderer.line(_:of:)` gives it.
        public func line(_ number: Int) -> String? {
            guard number >= 1, number <= starts.count else { return nil }
            let start = starts[number - 1]
            var end = start
            var length = 0
            while end < scalars.endIndex, scalars[end] != "\n", scalars[end] != "\r", length <= 400 {
                end = scalars.index(after: end)
                length += 1
            }
            return DiagnosticRenderer.cut(String(scalars[start..<end]))
        }
    }

    static func cut(_ line: String) -> String {
        line.unicodeScalars.count > 400 ? String(String.UnicodeScalarView(line.unicodeScalars.prefix(400))) + "…" : line
    }

    private func paint(_ text: String, _ sgr: String) -> String {
        useColor ? "\u{1B}[\(sgr)m\(text)\u{1B}[0m" : text
    }

    /// The 1-based line of `text`, without its line break; long lines are
    /// cut so one minified file cannot flood a terminal.
    public static func line(_ number: Int, of text: String) -> String? {
        guard number >= 1 else { return nil }
        var current = 1
        var start = text.unicodeScalars.startIndex
        let scalars = text.unicodeScalars
        var index = start
        while index < scalars.endIndex {
            if current == number { break }
            if scalars[index] == "\n" {
                current += 1
                start = scalars.index(after: index)
            }
            index = scalars.index(after: index)
        }
        guard current == number else { return nil }
        var end = start
        while end < scalars.endIndex, scalars[end] != "\n", scalars[end] != "\r" {
            end = scalars.index(after: end)
        }
        return cut(String(scalars[start..<end]))
    }

    /// Spaces up to the column, keeping tabs as tabs so the caret lines up
    /// whatever the terminal's tab width.
    static func caretPadding(_ line: String, column: Int) -> String {
        // Never far past a line as shown (at most 400 characters and "…"):
        // a column out in a minified file is not a screenful of spaces.
        let column = min(column, 402)
        var pad = ""
        for (i, scalar) in line.unicodeScalars.enumerated() where i < column - 1 {
            pad.unicodeScalars.append(scalar == "\t" ? "\t" : " ")
        }
        let missing = column - 1 - line.unicodeScalars.count
        if missing > 0 { pad += String(repeating: " ", count: missing) }
        return pad
    }
}
