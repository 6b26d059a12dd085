#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FlowdirCore
import FlowdirIO

/// `flowdir service install`: the watcher as a systemd user service.
struct ServiceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "service",
        abstract: "Run the watcher as a systemd user service.",
        subcommands: [Install.self]
    )

    struct Install: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "install",
            abstract: "Write ~/.config/systemd/user/flowdir.service and say how to enable it."
        )

        @Option(name: .customLong("root"), help: "A folder to watch (repeatable; default: the config's roots).")
        var roots: [String] = []

        @Option(help: "Seconds running jobs may take when the service stops.")
        var grace: Double = 30

        func validate() throws { try SecondsOption.check(grace, "--grace") }

        func run() throws {
            let ctx = try Context.load()
            let given = roots.isEmpty ? ctx.config.roots : roots
            guard !given.isEmpty else {
                throw CommandError("no folder to watch", hint: "pass --root DIR, or list `roots` in \(ctx.paths.flowdirConfig)/config.yaml")
            }
            var absolute: [String] = []
            for root in given {
                guard let real = Files.realPath(root) else { throw CommandError("\(root) does not exist") }
                absolute.append(real)
            }
            let binary = Files.realPath(CommandLine.arguments[0]) ?? Files.realPath("/proc/self/exe") ?? "flowdir"
            let unit = Self.unit(binary: binary, roots: absolute, grace: grace,
                                 config: Environment()["FLOWDIR_CONFIG"])
            let file = ctx.paths.configHome + "/systemd/user/flowdir.service"
            try Files.writeAtomically(file, unit)
            Output.line("Wrote \(file), watching \(absolute.joined(separator: ", ")).")
            Output.line("Enable it with:")
            Output.line("  systemctl --user daemon-reload && systemctl --user enable --now flowdir.service")
            Output.line("and follow it with `journalctl --user -u flowdir -f`; `flowdir status` shows it running.")
        }

        static func quoted(_ s: String) -> String {
            s.allSatisfy { $0.isLetter || $0.isNumber || "/._-+".contains($0) } ? s : "\"" + String(s.flatMap { $0 == "\\" || $0 == "\"" ? ["\\", $0] : [$0] }) + "\""
        }

        static func unit(binary: String, roots: [String], grace: Double, config: String?) -> String {
            let args = ([binary, "watch", "--grace", ParamValue.plainNumber(grace)] + roots).map(quoted).joined(separator: " ")
            return """
                # Written by `flowdir service install`.
                [Unit]
                Description=flowdir watcher: advances the workflows under \(roots.joined(separator: ", "))

                [Service]
                ExecStart=\(args)
                \(config.map { "Environment=FLOWDIR_CONFIG=\(quoted($0))\n" } ?? "")Restart=on-failure
                KillSignal=SIGTERM
                TimeoutStopSec=\(Int(grace) + 30)

                [Install]
                WantedBy=default.target

                """
        }
    }
}
