import FlowdirCore
import CYaml

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
    init(parser: yaml_parser_t, bytes: UnsafeBufferPointer<UInt8>) {
        let problem = parser.problem.map { String(cString: $0) } ?? "unknown error"
        if problem.hasPrefix("Maximum nesting level") {  // libyaml's own cap on flow nesting
            self.init("nesting is deeper than \(YAMLReader.maxDepth) levels",
                      line: Int(parser.problem_mark.line) + 1, column: Int(parser.problem_mark.column) + 1)
            return
        }
        var message = (parser.error == YAML_READER_ERROR ? "unreadable YAML: " : "invalid YAML: ") + problem
        if let context = parser.context.map({ String(cString: $0) }), !context.isEmpty {
            message += " (\(context) at line \(parser.context_mark.line + 1), column \(parser.context_mark.column + 1))"
        }
        if parser.error == YAML_READER_ERROR {
            let (line, column) = DocumentReader.position(Int(parser.problem_offset), in: bytes)
            self.init(message, line: line, column: column)
        } else {
            self.init(message, line: Int(parser.problem_mark.line) + 1, column: Int(parser.problem_mark.column) + 1)
        }
    }
}
