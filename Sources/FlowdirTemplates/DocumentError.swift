import FlowdirCore
import Yams

/// A file that is not a well-formed document: where and why.
struct DocumentError: Error, Sendable {
    var message: String
    var line: Int
    var column: Int
    var hint: String?

    init(_ message: String, line: Int, column: Int, hint: String? = nil) {
        self.message = message
        self.line = line
        self.column = column
        self.hint = hint
    }

    init(_ error: JSONParser.SyntaxError) {
        self.init(error.message, line: error.line, column: error.column)
    }

    /// libyaml's wording, kept, with its position.
    init(_ error: YamlError) {
        func text(_ context: YamlError.Context?, _ problem: String) -> String {
            guard let context, !context.text.isEmpty else { return problem }
            return "\(problem) (\(context.text) at line \(context.mark.line), column \(context.mark.column))"
        }
        switch error {
        case .scanner(let context, let problem, let mark, _),
             .parser(let context, let problem, let mark, _),
             .composer(let context, let problem, let mark, _):
            self.init("invalid YAML: " + text(context, problem), line: mark.line, column: mark.column)
        case .reader(let problem, let offset, _, let yaml):
            let (line, column) = Self.position(ofUTF8Offset: offset ?? 0, in: yaml)
            self.init("unreadable YAML: \(problem)", line: line, column: column)
        case .duplicatedKeysInMapping(let duplicates, let context):
            let names = duplicates.map { "'\($0)'" }.joined(separator: ", ")
            self.init("duplicate key \(names) in one mapping", line: context.mark.line, column: context.mark.column,
                      hint: "each key may appear once in a mapping; remove or rename the repeat")
        default:
            self.init("invalid YAML: \(error)", line: 1, column: 1)
        }
    }

    static func position(ofUTF8Offset offset: Int, in text: String) -> (Int, Int) {
        var line = 1, column = 1
        for (i, b) in text.utf8.enumerated() {
            if i >= offset { break }
            if b == 0x0A { line += 1; column = 1 } else if b & 0xC0 != 0x80 { column += 1 }
        }
        return (line, column)
    }
}
