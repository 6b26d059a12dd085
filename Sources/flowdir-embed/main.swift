#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

// The build tool of the EmbedPages plugin: writes the page files it is
// given (HTML, CSS, JavaScript) into one Swift file as raw string literals,
// so that the pages are in the binary and nothing is read next to it at run
// time. A string literal compiles in milliseconds; the same text as a byte
// array literal (SwiftPM's `embedInCode`) takes the compiler far longer.
//
//   flowdir-embed OUTPUT.swift FILE…
//
// Each literal holds the file's bytes exactly: it is delimited with enough
// `#`s that nothing in the text can end it or start an escape, and what a
// multi-line literal cannot hold as it is (a carriage return, other control
// characters) is written as an escape the literal turns back into the byte.

struct EmbedError: Error, CustomStringConvertible {
    var description: String
}

/// The fewest `#`s (at least one) such that the text holds neither `"` nor
/// `\` followed by that many: then no quote in it ends the literal and no
/// backslash in it is an escape or an interpolation.
func delimiterLength(_ bytes: [UInt8]) -> Int {
    var longest = 0
    var i = 0
    while i < bytes.count {
        if bytes[i] == UInt8(ascii: "\"") || bytes[i] == UInt8(ascii: "\\") {
            var run = 0
            while i + 1 + run < bytes.count, bytes[i + 1 + run] == UInt8(ascii: "#") { run += 1 }
            longest = max(longest, run)
        }
        i += 1
    }
    return longest + 1
}

/// A raw multi-line string literal whose value is exactly `text`.
func literal(_ text: String, bytes: [UInt8]) -> String {
    let hashes = String(repeating: "#", count: delimiterLength(bytes))
    var body = ""
    body.reserveCapacity(bytes.count + bytes.count / 16)
    for scalar in text.unicodeScalars {
        switch scalar.value {
        case 0x0A, 0x09: body.unicodeScalars.append(scalar)
        case 0x0D: body += "\\" + hashes + "r"
        case 0x00...0x1F, 0x7F: body += "\\" + hashes + "u{" + String(scalar.value, radix: 16) + "}"
        default: body.unicodeScalars.append(scalar)
        }
    }
    // The line break before the closing delimiter is not part of the value.
    return hashes + "\"\"\"\n" + body + "\n\"\"\"" + hashes
}

func swiftName(_ index: Int) -> String { "file\(index)" }

func fileName(_ path: String) -> String { path.split(separator: "/").last.map(String.init) ?? path }

func run(_ arguments: [String]) throws(EmbedError) {
    guard arguments.count >= 2 else { throw EmbedError(description: "usage: flowdir-embed OUTPUT.swift FILE…") }
    let output = arguments[0]
    let inputs = arguments.dropFirst().sorted { fileName($0) < fileName($1) }
    var out = """
        // Generated at build time by flowdir-embed (the EmbedPages plugin) from the files in
        // the target's Pages/ folder. Edit those files, not this one.

        enum PageFiles {

        """
    var entries: [String] = []
    for (index, path) in inputs.enumerated() {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw EmbedError(description: "\(path): cannot be read")
        }
        let bytes = [UInt8](data)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw EmbedError(description: "\(path): is not UTF-8 text; a page file must be")
        }
        let name = fileName(path)
        guard !name.isEmpty, name.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) || ("a"..."z").contains($0)
                                                              || ("A"..."Z").contains($0) || "._-".unicodeScalars.contains($0) }) else {
            throw EmbedError(description: "\(path): name a page file with ASCII letters, digits, '.', '-' and '_' only (it is its URL)")
        }
        out += "    /// \(name)\n    static let \(swiftName(index)) = " + literal(text, bytes: bytes) + "\n\n"
        entries.append("        (name: \"\(name)\", text: \(swiftName(index))),\n")
    }
    out += "    /// Each page file's name and its text, byte for byte, by name.\n"
    out += "    static let all: [(name: String, text: String)] = [\n" + entries.joined() + "    ]\n}\n"
    // Written only when it changed, so that an unchanged page compiles nothing again.
    if let old = FileManager.default.contents(atPath: output), old == Data(out.utf8) { return }
    guard FileManager.default.createFile(atPath: output, contents: Data(out.utf8)) else {
        throw EmbedError(description: "\(output): cannot be written")
    }
}

do {
    try run(Array(CommandLine.arguments.dropFirst()))
} catch {
    let message = Array("flowdir-embed: \(error)\n".utf8)
    _ = write(2, message, message.count)
    exit(1)
}
