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
    /// A line for a person: control characters in it (from a title, a
    /// reason, a log line: text from files, maybe from another machine) are
    /// shown, never obeyed (see `TerminalText.visible`).
    static func line(_ text: String = "") {
        write(Array((TerminalText.visible(text) + "\n").utf8), to: 1)
    }

    static func error(_ text: String) {
        write(Array((TerminalText.visible(text) + "\n").utf8), to: 2)
    }

    /// As it is: a partial line, a log's bytes. A closed stream loses it.
    static func write(_ bytes: [UInt8], to fd: Int32) {
        _ = Files.writeAll(fd, bytes)
    }

    static func json<T: Encodable>(_ value: T) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        line(String(decoding: try encoder.encode(value), as: UTF8.self))
    }
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

/// Text from files made safe to print on a terminal.
enum TerminalText {
    /// Control characters as `cat -v` shows them (`^[`, `^G`, `^M`; C1 ones
    /// as `<U+009B>`), so an escape sequence in a title cannot move the
    /// cursor, retitle the window or clear the screen. Kept: line breaks
    /// and tabs, and the colour codes flowdir itself writes (`ESC [ 1;31 m`).
    static func visible(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = String.UnicodeScalarView()
        let scalars = Array(text.unicodeScalars)
        var i = 0
        while i < scalars.count {
            let c = scalars[i]
            if c == "\u{1B}", let end = sgrEnd(scalars, from: i) {
                out.append(contentsOf: scalars[i...end])
                i = end + 1
                continue
            }
            if c == "\n" || c == "\t" || !isControl(c) {
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

    /// One line of a table or a heading: a line break shows as `^J` too.
    static func oneLine(_ text: String) -> String {
        visible(text).split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "^J")
    }

    static func isControl(_ c: Unicode.Scalar) -> Bool {
        c.value < 0x20 || (0x7F...0x9F).contains(c.value)
    }

    /// The index of the `m` of a colour code (ESC [ digits and ; m) at `start`.
    static func sgrEnd(_ s: [Unicode.Scalar], from start: Int) -> Int? {
        guard start + 2 < s.count, s[start + 1] == "[" else { return nil }
        var j = start + 2
        while j < s.count, s[j] == ";" || ("0"..."9").contains(s[j]) { j += 1 }
        return j < s.count && s[j] == "m" ? j : nil
    }
}

private extension String {
    func leftPadded(_ width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
