import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirServer
import Foundation
import Logging

/// `flowdir jobserver`: a Replicate-compatible job API for your own GPU
/// box, and for tests and demos (DESIGN.md §12).
struct JobserverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobserver",
        abstract: "Serve a Replicate-compatible job API in front of cog servers and flowdir tools.",
        discussion: """
            Models are cog servers (--model owner/name=http://127.0.0.1:5000, each started without Docker: \
            python -m cog.server.http) or the tool files of --tools DIR, as models tools/<Kind>. Predictions are kept \
            as files under --dir, with an access log (DIR/access.log); GET /v1/_stats says how many were made. \
            --faults FILE injects 503s, 429s with Retry-After, delays, dropped connections and non-JSON bodies \
            (docs/jobserver.md). Stop it with Ctrl-C or SIGTERM.
            """
    )

    @Option(help: "Port to listen on (0: any free one, printed).")
    var port = 8700

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(name: .customLong("token-file"), help: "A file holding the token clients must send (Authorization: Bearer …).")
    var tokenFile: String?

    @Option(name: .customLong("webhook-secret-file"), help: "A file holding the secret webhooks are signed with (whsec_…).")
    var webhookSecretFile: String?

    @Option(help: "Where predictions, files and the access log are kept.")
    var dir = "jobserver-data"

    @Option(name: .customLong("model"), help: "A cog server as a model: owner/name=http://127.0.0.1:5000, or a tool of --tools under that name: owner/name=tools/<Kind> (repeatable).")
    var models: [String] = []

    @Option(help: "A folder of flowdir tool files, each served as model tools/<Kind>.")
    var tools: String?

    @Option(help: "A YAML file of faults to inject (docs/jobserver.md).")
    var faults: String?

    @Option(name: .customLong("rate-limit"), help: "Requests per minute per token before 429 Too Many Requests.")
    var rateLimit = 6000

    @Option(name: .customLong("file-lifetime"), help: "Seconds uploads and output files are served.")
    var fileLifetime: Double = 3600

    func run() async throws {
        var config = JobServerConfig(dir: Self.absolute(dir))
        config.host = host
        config.port = port
        config.rateLimit = rateLimit
        config.fileLifetime = fileLifetime
        config.token = try tokenFile.map { try Self.secret($0, what: "--token-file") }
        config.webhookSecret = try webhookSecretFile.map { try Self.secret($0, what: "--webhook-secret-file") }
        if let s = config.webhookSecret, s.hasPrefix("whsec_"), Data(base64Encoded: String(s.dropFirst(6))) == nil {
            throw CommandError("--webhook-secret-file \(webhookSecretFile ?? ""): the secret is not whsec_ followed by base64",
                               hint: "make one with: echo whsec_$(head -c 24 /dev/urandom | base64)")
        }
        for m in models {
            let parts = m.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, parts[0].split(separator: "/").count == 2, parts[1].hasPrefix("http") || parts[1].hasPrefix("tools/") else {
                throw CommandError("--model '\(m)' is not owner/name=URL (or owner/name=tools/<Kind>)",
                                   hint: "e.g. --model acme/stylize=http://127.0.0.1:5000, a cog server")
            }
            config.models[parts[0]] = parts[1]
        }
        config.toolsDirectory = tools.map(Self.absolute)
        if let faults {
            let bytes: [UInt8]
            do { bytes = try LocalFileSystem().readFile(faults, limit: 1 << 20) } catch {
                throw CommandError("cannot read --faults \(faults): \(error)")
            }
            do { config.faults = try Faults.load(bytes, file: faults) } catch { throw CommandError("\(error)") }
        }
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        let server: JobServer
        do { server = try JobServer(config: config) } catch JobServerError.badModel(let why) {
            throw CommandError("--model \(why)", hint: "a tool named by --model must be a file of --tools with a run.command")
        } catch {
            throw CommandError("\(error)", hint: "give a folder you can write with --dir, and a --tools folder you can read")
        }
        let shown = config
        do {
            try await server.run { port in
                Output.line("flowdir jobserver: http://\(shown.host):\(port)/v1 (data in \(shown.dir))")
            }
        } catch {
            throw CommandError("cannot serve on \(host):\(port): \(error)",
                               hint: "another program may use the port: pick another with --port (0 picks any free one)")
        }
    }

    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : Path.join(Files.currentDirectory, path)
    }

    static func secret(_ path: String, what: String) throws -> String {
        do {
            let text = String(decoding: try LocalFileSystem().readFile(path, limit: 64 << 10), as: UTF8.self)
            let secret = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !secret.isEmpty else { throw CommandError("\(what) \(path) is empty") }
            return secret
        } catch let error as CommandError {
            throw error
        } catch {
            throw CommandError("cannot read \(what) \(path): \(error)")
        }
    }
}
