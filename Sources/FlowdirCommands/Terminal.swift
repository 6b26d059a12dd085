#if canImport(Glibc)
import Glibc
#endif
import FlowdirIO
// JSONEncoder only: the rest of Foundation (and the ICU it needs) stays out of the binary.
import FoundationEssentials

/// What the command layer knows about where it writes: colour only on a
/// terminal, and never with NO_COLOR (https://no-color.org).
struct Terminal {
    var colorOut: Bool
    var colorErr: Bool

    static var current: Terminal {
        let env = Environment()
        let allowed = env["NO_COLOR"].map(\.isEmpty) ?? true
        let dumb = env["TERM"] == "dumb"
        return Terminal(colorOut: allowed && !dumb && isatty(1) == 1,
                        colorErr: allowed && !dumb && isatty(2) == 1)
    }

    func paint(_ text: String, _ sgr: String) -> String {
        colorOut ? "\u{1B}[\(sgr)m\(text)\u{1B}[0m" : text
    }
}

/// Where commands write. Only this layer prints.
enum Output {
    /// A line for a person. The last guard for text from files (a title, a
    /// reason, a log line; maybe from another machine): control characters
    /// in it are shown, never obeyed (see `TerminalText.visible`). Commands
    /// also pass each piece of such text through `TerminalText.oneLine`
    /// before adding their own colours, so that not even a colour code in
    /// it reaches a terminal.
    static func line(_ text: String = "") {
        write(Array((TerminalText.visible(text, colour: colourOut) + "\n").utf8), to: 1)
    }

    static func error(_ text: String) {
        write(Array((TerminalText.visible(text, colour: colourErr) + "\n").utf8), to: 2)
    }

    /// As it is: a partial line, a log's bytes. A closed stream loses it.
    static func write(_ bytes: [UInt8], to fd: Int32) {
        _ = Files.writeAll(fd, bytes)
    }

    static func json<T: Encodable>(_ value: T) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let text = String(decoding: try encoder.encode(value), as: UTF8.self)
        write(Array((TerminalText.jsonEscaped(text) + "\n").utf8), to: 1)
    }

    /// Whether flowdir's colour codes may reach each stream at all.
    private static let colourOut = Terminal.current.colorOut
    private static let colourErr = Terminal.current.colorErr
}

/// The places flowdir looks in by default, from the environment.
struct UserPaths {
    var configHome: String
    var home: String

    static var current: UserPaths {
        let env = Environment()
        let home = env["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "/"
        let config = env["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.config"
        return UserPaths(configHome: config, home: home)
    }

    var flowdirConfig: String { configHome + "/flowdir" }
    var toolDirectory: String { flowdirConfig + "/tools" }
    var templateDirectory: String { flowdirConfig + "/workflows" }
}

/// The process's environment, read where it is asked for (getenv(3)).
struct Environment {
    subscript(name: String) -> String? { getenv(name).map { String(cString: $0) } }
}

/// Text from files made safe to print on a terminal: shown, never obeyed.
enum TerminalText {
    /// A piece of text from a file (a title, a reason, a node id, a path, a
    /// log line) as one line of output, before flowdir adds its own
    /// colours: every control character as `cat -v` shows it (ESC as `^[`,
    /// BEL as `^G`, a line break as `^J`, a tab as `^I`), C1 controls and
    /// the Unicode ones that reorder or break a line as `<U+202E>`. So an
    /// escape sequence cannot move the cursor, retitle the window, clear
    /// the screen, hide or colour text, and a table keeps its rows.
    static func oneLine(_ text: String) -> String {
        escaped(text, keepLayout: false, colour: false)
    }

    /// A whole line of output: the same, but line breaks and tabs kept and,
    /// when the stream shows colour, flowdir's own colour codes (`ESC [ 1;31 m`:
    /// bold, dim, red, green, yellow, cyan, reset) kept too.
    static func visible(_ text: String, colour: Bool = false) -> String {
        escaped(text, keepLayout: true, colour: colour)
    }

    private static func escaped(_ text: String, keepLayout: Bool, colour: Bool) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = String.UnicodeScalarView()
        let scalars = Array(text.unicodeScalars)
        var i = 0
        while i < scalars.count {
            let c = scalars[i]
            if colour, c == "\u{1B}", let end = paletteEnd(scalars, from: i) {
                out.append(contentsOf: scalars[i...end])
                i = end + 1
                continue
            }
            if !isControl(c) || keepLayout && (c == "\n" || c == "\t") {
                out.append(c)
            } else if c.value < 0x20 || c.value == 0x7F {
                out.append(contentsOf: "^".unicodeScalars)
                out.append(Unicode.Scalar(UInt8(c.value == 0x7F ? 0x3F : c.value + 0x40)))
            } else {
                out.append(contentsOf: "<U+\(String(c.value, radix: 16, uppercase: true).leftPadded(4))>".unicodeScalars)
            }
            i += 1
        }
        return String(out)
    }

    /// C0 and C1 controls, DEL, and the Unicode line and paragraph
    /// separators and bidirectional embeddings, overrides and isolates
    /// (which make `txt.exe` read as `exe.txt`).
    static func isControl(_ c: Unicode.Scalar) -> Bool {
        c.value < 0x20 || (0x7F...0x9F).contains(c.value) || c.value == 0x2028 || c.value == 0x2029
            || (0x202A...0x202E).contains(c.value) || (0x2066...0x2069).contains(c.value)
    }

    /// JSON as it is, but for the controls JSONEncoder leaves raw in a string
    /// (DEL, C1, the Unicode ones above) written as `\u009b`: the same
    /// value to any JSON reader, and nothing a terminal would obey. (It
    /// escapes C0 ones itself; those left are its layout.)
    static func jsonEscaped(_ json: String) -> String {
        func raw(_ c: Unicode.Scalar) -> Bool { c.value >= 0x20 && isControl(c) }
        guard json.unicodeScalars.contains(where: raw) else { return json }
        var out = String.UnicodeScalarView()
        for c in json.unicodeScalars {
            if raw(c) {
                out.append(contentsOf: "\\u\(String(c.value, radix: 16).leftPadded(4))".unicodeScalars)
            } else {
                out.append(c)
            }
        }
        return String(out)
    }

    /// The SGR parameters flowdir writes (`Terminal.paint`, the diagnostic renderer).
    private static let palette: Set<String> = ["0", "1", "2", "31", "32", "33", "36"]

    /// The index of the `m` of one of flowdir's colour codes (ESC [ n;… m, each n in `palette`) at `start`.
    static func paletteEnd(_ s: [Unicode.Scalar], from start: Int) -> Int? {
        guard start + 2 < s.count, s[start + 1] == "[" else { return nil }
        var j = start + 2, params = ""
        while j < s.count, s[j] == ";" || ("0"..."9").contains(s[j]) {
            params.unicodeScalars.append(s[j])
            j += 1
        }
        guard j < s.count, s[j] == "m", !params.isEmpty,
              params.split(separator: ";", omittingEmptySubsequences: false).allSatisfy({ palette.contains(String($0)) })
        else { return nil }
        return j
    }
}

private extension String {
    func leftPadded(_ width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
