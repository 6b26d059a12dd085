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
        var out = ""
        if let loc = diagnostic.location {
            out += "\(loc.file):\(loc.line):\(loc.column): "
        } else if let file = diagnostic.file {
            out += "\(file): "
        }
        let label = "\(diagnostic.severity.rawValue)[\(diagnostic.code.rawValue)]"
        out += paint(label, diagnostic.severity == .error ? "1;31" : "1;33")
        out += ": " + diagnostic.message
        if let loc = diagnostic.location, let text = sources[loc.file],
           let line = Self.line(loc.line, of: text) {
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
        diagnostics.map(render).joined(separator: "\n")
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
        let line = String(scalars[start..<end])
        return line.unicodeScalars.count > 400 ? String(String.UnicodeScalarView(line.unicodeScalars.prefix(400))) + "…" : line
    }

    /// Spaces up to the column, keeping tabs as tabs so the caret lines up
    /// whatever the terminal's tab width.
    static func caretPadding(_ line: String, column: Int) -> String {
        var pad = ""
        for (i, scalar) in line.unicodeScalars.enumerated() where i < column - 1 {
            pad.unicodeScalars.append(scalar == "\t" ? "\t" : " ")
        }
        let missing = column - 1 - line.unicodeScalars.count
        if missing > 0 { pad += String(repeating: " ", count: missing) }
        return pad
    }
}
