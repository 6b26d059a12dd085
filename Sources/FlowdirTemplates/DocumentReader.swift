import FlowdirCore

public enum DocumentFormat: String, Sendable {
    case yaml, json, jsonc

    /// By extension; otherwise a document that opens with `{` is JSON(C).
    static func detect(path: String, bytes: [UInt8]) -> DocumentFormat {
        switch Path.fileExtension(path) {
        case "json": return .json
        case "jsonc", "json5": return .jsonc
        case "yaml", "yml": return .yaml
        default:
            let first = bytes.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
            return first == UInt8(ascii: "{") ? .jsonc : .yaml
        }
    }
}

/// Bytes → `MarkedValue` for any of the three formats, refusing what is not
/// a text document (binary, not UTF-8, empty, huge) with a clear reason.
public enum DocumentReader {
    /// Templates and tool files are small; refuse anything bigger unread.
    public static let maxSize = 16 << 20

    public struct Parsed: Sendable {
        public var value: MarkedValue
        public var text: String
    }

    /// Returns the document, or the one diagnostic that says why there is none.
    public static func read(_ bytes: [UInt8], file: String, format: DocumentFormat? = nil)
        -> Result<Parsed, Diagnostic>
    {
        func fail(_ message: String, _ line: Int = 1, _ column: Int = 1, hint: String? = nil) -> Result<Parsed, Diagnostic> {
            .failure(.error(.malformedFile, message, at: SourceLocation(file: file, line: line, column: column), hint: hint))
        }
        var bytes = bytes
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        guard bytes.count <= maxSize else {
            return .failure(.error(.malformedFile, "the file is \(ByteCount(bytes.count)); a template or tool file may be at most \(ByteCount(maxSize))",
                                   file: file, hint: "is this the right file?"))
        }
        if let nul = ByteScan.firstNUL(in: bytes) {
            let (l, c) = position(nul, in: bytes)
            return fail("this is not a text file (a NUL byte at offset \(nul))", l, c,
                        hint: "templates are YAML, JSON or JSONC text")
        }
        if String(validating: bytes, as: UTF8.self) == nil, let bad = UTF8Check.firstInvalid(in: bytes) {
            let (l, c) = position(bad, in: bytes)
            return fail("the file is not valid UTF-8 (byte 0x\(String(bytes[bad], radix: 16)) at offset \(bad))", l, c,
                        hint: "save it as UTF-8")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        let empty = "the file is empty"
        let emptyHint = "a template needs at least `schema`, `name` and `nodes`"
        switch format ?? DocumentFormat.detect(path: file, bytes: bytes) {
        case .json, .jsonc:
            let lenient = (format ?? DocumentFormat.detect(path: file, bytes: bytes)) == .jsonc
            if bytes.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) { return fail(empty, hint: emptyHint) }
            do {
                return .success(Parsed(value: try JSONParser.parse(bytes, file: file, allowComments: lenient), text: text))
            } catch {
                let e = DocumentError(error)
                return fail(e.message, e.line, e.column, hint: e.hint)
            }
        case .yaml:
            do {
                guard let value = try YAMLReader.parse(bytes, file: file) else { return fail(empty, hint: emptyHint) }
                if case .null = value.kind { return fail(empty, hint: emptyHint) }  // `---` and nothing else
                return .success(Parsed(value: value, text: text))
            } catch {
                return fail(error.message, error.line, error.column, hint: error.hint ?? yamlHint(text, error))
            }
        }
    }

    /// The text `read` quotes from for `bytes` (as read: without a leading BOM).
    public static func text(of bytes: [UInt8]) -> String {
        String(decoding: bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes[...], as: UTF8.self)
    }

    /// libyaml says "found character that cannot start any token" for a tab;
    /// say what to do about it.
    private static func yamlHint(_ text: String, _ error: DocumentError) -> String? {
        guard let line = DiagnosticRenderer.line(error.line, of: text) else { return nil }
        let scalars = Array(line.unicodeScalars)
        guard error.column >= 1, error.column <= scalars.count, scalars[error.column - 1] == "\t" else { return nil }
        return "YAML does not allow tabs for indentation; indent with spaces"
    }

    /// The text of a file that could not be parsed, for quoting its lines;
    /// `nil` for binary or non-UTF-8 content, which is not worth quoting.
    static func quotableText(_ bytes: [UInt8]) -> String? {
        guard ByteScan.firstNUL(in: bytes) == nil else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Line and column (in Unicode scalars, as libyaml counts) of a byte offset.
    static func position(_ offset: Int, in bytes: some Collection<UInt8>) -> (Int, Int) {
        var line = 1, column = 1
        for b in bytes.prefix(offset) {
            if b == 0x0A { line += 1; column = 1 } else if b & 0xC0 != 0x80 { column += 1 }
        }
        return (line, column)
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// Whole-file scans done with libc, which is fast even in a debug build.
enum ByteScan {
    static func firstNUL(in bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress, let hit = memchr(base, 0, raw.count) else { return nil }
            return base.distance(to: UnsafeRawPointer(hit))
        }
    }
}
