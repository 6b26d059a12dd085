/// `run.command`: an argv array with placeholders. Each placeholder is
/// replaced *inside* one argument and never splits or joins arguments, so a
/// param value cannot become shell code or an extra flag.
public struct CommandTemplate: Sendable, Equatable {
    public var arguments: [[Piece]]

    public enum Piece: Sendable, Equatable {
        case literal(String)
        case input(String)
        case output(String)
        case param(String)
        case runDir
        /// The folder of the tool's file, so a tool can ship its script beside it.
        case toolDir
    }

    public struct ParseError: Error, Equatable, Sendable {
        public var argument: Int
        public var message: String
    }

    public init(arguments: [[Piece]]) { self.arguments = arguments }

    /// Parses `["magick", "{inputs.image}", "-quality", "{params.q}"]`.
    /// `{{` and `}}` stand for literal braces.
    public init(parsing argv: [String]) throws(ParseError) {
        guard !argv.isEmpty else { throw ParseError(argument: 0, message: "the command is empty") }
        var parsed: [[Piece]] = []
        for (i, arg) in argv.enumerated() {
            parsed.append(try Self.parse(arg, index: i))
        }
        self.arguments = parsed
    }

    private static func parse(_ arg: String, index: Int) throws(ParseError) -> [Piece] {
        var pieces: [Piece] = []
        var literal = ""
        var chars = Substring(arg)
        while let c = chars.first {
            chars = chars.dropFirst()
            if c == "{" {
                if chars.first == "{" { literal.append("{"); chars = chars.dropFirst(); continue }
                guard let close = chars.firstIndex(of: "}") else {
                    throw ParseError(argument: index, message: "'{' without a closing '}' in \"\(arg)\" (write '{{' for a literal brace)")
                }
                let name = String(chars[..<close])
                chars = chars[chars.index(after: close)...]
                if !literal.isEmpty { pieces.append(.literal(literal)); literal = "" }
                pieces.append(try placeholder(name, arg: arg, index: index))
            } else if c == "}" {
                if chars.first == "}" { chars = chars.dropFirst() }
                literal.append("}")
            } else {
                literal.append(c)
            }
        }
        if !literal.isEmpty || pieces.isEmpty { pieces.append(.literal(literal)) }
        return pieces
    }

    private static func placeholder(_ name: String, arg: String, index: Int) throws(ParseError) -> Piece {
        let parts = name.split(separator: ".", maxSplits: 1).map(String.init)
        switch (parts.first, parts.count) {
        case ("inputs", 2): return .input(parts[1])
        case ("outputs", 2): return .output(parts[1])
        case ("params", 2): return .param(parts[1])
        case ("run", 2) where parts[1] == "dir": return .runDir
        case ("tool", 2) where parts[1] == "dir": return .toolDir
        default:
            throw ParseError(argument: index, message: "unknown placeholder '{\(name)}' in \"\(arg)\"; use {inputs.PORT}, {outputs.PORT}, {params.NAME}, {run.dir} or {tool.dir}")
        }
    }

    /// Every placeholder used, for checking them against the tool's ports and params.
    public var placeholders: [Piece] {
        arguments.flatMap { $0 }.filter { if case .literal = $0 { false } else { true } }
    }

    /// The argv for one run. Each template argument yields exactly one argument.
    public func expand(inputs: [String: String], outputs: [String: String],
                       params: [String: String], runDir: String, toolDir: String) -> [String] {
        arguments.map { pieces in
            pieces.map { piece in
                switch piece {
                case .literal(let s): s
                case .input(let p): inputs[p] ?? ""  // an absent optional input is empty
                case .output(let p): outputs[p] ?? ""
                case .param(let k): params[k] ?? ""
                case .runDir: runDir
                case .toolDir: toolDir
                }
            }.joined()
        }
    }
}
