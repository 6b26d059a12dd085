/// JSON, and JSON with comments (`.jsonc`: `//` and `/* */` comments and
/// trailing commas), parsed into `MarkedValue` with the line and column of
/// every value. Hand-written because no JSON library keeps positions.
public struct JSONParser {
    public struct SyntaxError: Error, Equatable, Sendable {
        public var message: String
        public var line: Int
        public var column: Int

        public init(message: String, line: Int, column: Int) {
            self.message = message
            self.line = line
            self.column = column
        }
    }

    /// Deeper than this is refused rather than risking the stack.
    public static let maxDepth = 128

    public static func parse(_ bytes: [UInt8], file: String, allowComments: Bool) throws(SyntaxError) -> MarkedValue {
        var parser = JSONParser(bytes: bytes, file: file, lenient: allowComments)
        parser.skipSpace()
        guard !parser.atEnd else { throw parser.error("the document is empty") }
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.atEnd else { throw parser.error("unexpected \(parser.describeHere()) after the document's end") }
        return value
    }

    private let bytes: [UInt8]
    private let file: String
    private let lenient: Bool
    private var i = 0
    private var line = 1
    private var lineStart = 0
    // Columns count Unicode scalars: continuation bytes before `i` on this line.
    private var continuationBytes = 0

    private init(bytes: [UInt8], file: String, lenient: Bool) {
        self.bytes = bytes
        self.file = file
        self.lenient = lenient
    }

    private var atEnd: Bool { i >= bytes.count }
    private var column: Int { i - lineStart - continuationBytes + 1 }
    private var here: SourceLocation { SourceLocation(file: file, line: line, column: column) }

    private func error(_ message: String) -> SyntaxError {
        SyntaxError(message: message, line: line, column: column)
    }

    private func describeHere() -> String {
        guard !atEnd else { return "end of file" }
        if !lenient, bytes[i] == UInt8(ascii: "/"), i + 1 < bytes.count,
           bytes[i + 1] == UInt8(ascii: "/") || bytes[i + 1] == UInt8(ascii: "*") {
            return "a comment (comments are not allowed in .json; name the file .jsonc to use them)"
        }
        let b = bytes[i]
        if b >= 0x20, b < 0x7F { return "'\(Character(Unicode.Scalar(b)))'" }
        return "byte 0x" + String(b, radix: 16, uppercase: false)
    }

    private mutating func advance() {
        if bytes[i] == 0x0A {
            line += 1
            lineStart = i + 1
            continuationBytes = 0
        } else if bytes[i] & 0xC0 == 0x80 {
            continuationBytes += 1
        }
        i += 1
    }

    private mutating func skipSpace() {
        while i < bytes.count {
            switch bytes[i] {
            case 0x20, 0x09, 0x0A, 0x0D:
                advance()
            case 0x2F where lenient && i + 1 < bytes.count && bytes[i + 1] == 0x2F:
                while i < bytes.count, bytes[i] != 0x0A { advance() }
            case 0x2F where lenient && i + 1 < bytes.count && bytes[i + 1] == 0x2A:
                advance(); advance()
                while i < bytes.count, !(bytes[i] == 0x2A && i + 1 < bytes.count && bytes[i + 1] == 0x2F) { advance() }
                if i < bytes.count { advance(); advance() }
            default:
                return
            }
        }
    }

    private mutating func value(depth: Int) throws(SyntaxError) -> MarkedValue {
        guard depth < Self.maxDepth else {
            throw error("nesting is deeper than \(Self.maxDepth) levels")
        }
        guard !atEnd else { throw error("expected a value, found end of file") }
        let start = here
        switch bytes[i] {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return MarkedValue(.string(try string()), at: start)
        case UInt8(ascii: "t"): try literal("true"); return MarkedValue(.bool(true), at: start)
        case UInt8(ascii: "f"): try literal("false"); return MarkedValue(.bool(false), at: start)
        case UInt8(ascii: "n"): try literal("null"); return MarkedValue(.null, at: start)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default:
            throw error("expected a value, found \(describeHere())")
        }
    }

    private mutating func literal(_ word: String) throws(SyntaxError) {
        for b in word.utf8 {
            guard !atEnd, bytes[i] == b else { throw error("expected '\(word)'") }
            advance()
        }
    }

    private mutating func object(depth: Int) throws(SyntaxError) -> MarkedValue {
        let start = here
        advance()
        var entries: [MarkedValue.Entry] = []
        var seen: [String: SourceLocation] = [:]  // only for large objects
        skipSpace()
        if !atEnd, bytes[i] == UInt8(ascii: "}") { advance(); return MarkedValue(.mapping([]), at: start) }
        while true {
            skipSpace()
            if lenient, !atEnd, bytes[i] == UInt8(ascii: "}"), !entries.isEmpty { advance(); break }
            guard !atEnd, bytes[i] == UInt8(ascii: "\"") else {
                throw error("expected a quoted key, found \(describeHere())")
            }
            let keyAt = here
            let key = try string()
            let first = entries.count < 16 ? entries.first { $0.key == key }?.keyLocation : seen[key]
            if let first {
                throw SyntaxError(message: "duplicate key '\(key)' (first at line \(first.line), column \(first.column))",
                                  line: keyAt.line, column: keyAt.column)
            }
            if entries.count == 15 { for e in entries { seen[e.key] = e.keyLocation } }
            if entries.count >= 15 { seen[key] = keyAt }
            skipSpace()
            guard !atEnd, bytes[i] == UInt8(ascii: ":") else { throw error("expected ':' after key '\(key)', found \(describeHere())") }
            advance()
            skipSpace()
            entries.append(.init(key: key, keyLocation: keyAt, value: try value(depth: depth + 1)))
            skipSpace()
            guard !atEnd else { throw error("expected ',' or '}', found end of file (the object at line \(start.line) is not closed)") }
            if bytes[i] == UInt8(ascii: ",") { advance(); continue }
            if bytes[i] == UInt8(ascii: "}") { advance(); break }
            throw error("expected ',' or '}', found \(describeHere())")
        }
        return MarkedValue(.mapping(entries), at: start)
    }

    private mutating func array(depth: Int) throws(SyntaxError) -> MarkedValue {
        let start = here
        advance()
        var items: [MarkedValue] = []
        skipSpace()
        if !atEnd, bytes[i] == UInt8(ascii: "]") { advance(); return MarkedValue(.sequence([]), at: start) }
        while true {
            skipSpace()
            if lenient, !atEnd, bytes[i] == UInt8(ascii: "]"), !items.isEmpty { advance(); break }
            items.append(try value(depth: depth + 1))
            skipSpace()
            guard !atEnd else { throw error("expected ',' or ']', found end of file (the list at line \(start.line) is not closed)") }
            if bytes[i] == UInt8(ascii: ",") { advance(); continue }
            if bytes[i] == UInt8(ascii: "]") { advance(); break }
            throw error("expected ',' or ']', found \(describeHere())")
        }
        return MarkedValue(.sequence(items), at: start)
    }

    private mutating func string() throws(SyntaxError) -> String {
        advance()  // opening quote
        // Fast path: no escapes, no control characters, one line.
        var j = i
        while j < bytes.count, bytes[j] != UInt8(ascii: "\""), bytes[j] != UInt8(ascii: "\\"), bytes[j] >= 0x20 { j += 1 }
        if j < bytes.count, bytes[j] == UInt8(ascii: "\"") {
            let start = i
            guard let s = bytes.withUnsafeBufferPointer({ String(validating: UnsafeBufferPointer(rebasing: $0[start..<j]), as: UTF8.self) }) else {
                throw error("the string is not valid UTF-8")
            }
            // No line breaks inside: only the column needs keeping up.
            for k in i..<j where bytes[k] & 0xC0 == 0x80 { continuationBytes += 1 }
            i = j + 1
            return s
        }
        var out: [UInt8] = []
        while true {
            guard !atEnd else { throw error("unterminated string") }
            let b = bytes[i]
            if b == UInt8(ascii: "\"") { advance(); break }
            if b < 0x20 {
                throw error(b == 0x0A ? "unterminated string (a line break inside quotes)" : "control character in a string; escape it")
            }
            if b != UInt8(ascii: "\\") { out.append(b); advance(); continue }
            advance()
            guard !atEnd else { throw error("unterminated string") }
            let e = bytes[i]
            advance()
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var code = try hex4()
                if (0xD800..<0xDC00).contains(code) {
                    guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                        throw error("a lone UTF-16 surrogate in \\u escape")
                    }
                    advance(); advance()
                    let low = try hex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw error("invalid UTF-16 surrogate pair") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00..<0xE000).contains(code) {
                    throw error("a lone UTF-16 surrogate in \\u escape")
                }
                out.append(contentsOf: Array(String(Character(Unicode.Scalar(code)!)).utf8))
            default:
                throw error("invalid escape '\\\(Character(Unicode.Scalar(e)))'")
            }
        }
        guard let s = String(validating: out, as: UTF8.self) else { throw error("the string is not valid UTF-8") }
        return s
    }

    private mutating func hex4() throws(SyntaxError) -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard !atEnd, let d = Character(Unicode.Scalar(bytes[i])).hexDigitValue else {
                throw error("expected four hex digits after \\u")
            }
            v = v * 16 + UInt32(d)
            advance()
        }
        return v
    }

    private mutating func number() throws(SyntaxError) -> MarkedValue {
        let start = here
        let begin = i
        var isInteger = true
        if bytes[i] == UInt8(ascii: "-") { advance() }
        func digits(_ p: inout JSONParser) -> Int {
            var n = 0
            while !p.atEnd, p.bytes[p.i] >= 0x30, p.bytes[p.i] <= 0x39 { p.advance(); n += 1 }
            return n
        }
        let intStart = i
        guard digits(&self) > 0 else { throw error("expected digits in a number") }
        if bytes[intStart] == UInt8(ascii: "0"), i - intStart > 1 {
            throw SyntaxError(message: "numbers cannot have leading zeros", line: start.line, column: start.column)
        }
        if !atEnd, bytes[i] == UInt8(ascii: ".") {
            isInteger = false
            advance()
            guard digits(&self) > 0 else { throw error("expected digits after '.'") }
        }
        if !atEnd, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            isInteger = false
            advance()
            if !atEnd, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { advance() }
            guard digits(&self) > 0 else { throw error("expected digits in the exponent") }
        }
        let text = String(decoding: bytes[begin..<i], as: UTF8.self)
        if isInteger, let int = Int(text) { return MarkedValue(.int(int), at: start) }
        guard let d = Double(text) else { throw error("number out of range") }
        return MarkedValue(.double(d), at: start)
    }
}
