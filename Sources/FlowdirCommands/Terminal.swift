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
    static func line(_ text: String = "") {
        write(Array((text + "\n").utf8), to: 1)
    }

    static func error(_ text: String) {
        write(Array((text + "\n").utf8), to: 2)
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
