#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FlowdirCore
import FlowdirIO

/// `flowdir service install` / `uninstall`: the watcher as a systemd user
/// service. Neither runs systemctl: they write or remove files and say the
/// one command to run, so nothing starts or stops behind a person's back.
struct ServiceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "service",
        abstract: "Run the watcher as a systemd user service.",
        subcommands: [Install.self, Uninstall.self]
    )

    /// The first line of every unit flowdir writes: uninstall removes only those.
    static let marker = "# Written by `flowdir service install`."

    static func unitPath(_ ctx: Context) -> String { ctx.paths.configHome + "/systemd/user/flowdir.service" }

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
            let file = ServiceCommand.unitPath(ctx)
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
                \(ServiceCommand.marker)
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

    struct Uninstall: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "uninstall",
            abstract: "Remove the unit `flowdir service install` wrote, and its enabling link; say how to stop it."
        )

        func run() throws {
            let ctx = try Context.load()
            let file = ServiceCommand.unitPath(ctx)
            // Enabled means a link in default.target.wants (what `systemctl enable` makes).
            let wants = Path.directory(of: file) + "/default.target.wants/flowdir.service"
            guard Files.exists(file) else {
                Output.line("No \(file): nothing to remove.")
                return
            }
            let text: String
            do {
                text = String(decoding: try LocalFileSystem().readFile(file, limit: 1 << 20, followingLinks: false), as: UTF8.self)
            } catch {
                throw CommandError("could not read \(file): \(error); it is left as it is",
                                   hint: "if it is yours to remove: systemctl --user disable --now flowdir.service, then delete it")
            }
            guard text.hasPrefix(ServiceCommand.marker + "\n") else {
                throw CommandError("\(file) was not written by `flowdir service install`; it is left as it is",
                                   hint: "if it is yours to remove: systemctl --user disable --now flowdir.service, then delete it")
            }
            let enabled = Files.isSymbolicLink(wants)
            do {
                if enabled { try Files.remove(wants) }
                try Files.remove(file)
            } catch {
                throw CommandError("could not remove \(file): \(error)", hint: "check the folder's permissions and run it again")
            }
            Output.line("Removed \(file)\(enabled ? " and its link in default.target.wants" : "").")
            Output.line("If the watcher is running as this service, stop it with:")
            Output.line("  systemctl --user stop flowdir.service && systemctl --user daemon-reload")
        }
    }
}
