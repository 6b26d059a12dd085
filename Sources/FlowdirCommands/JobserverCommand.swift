import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirJobServer
import Foundation
import Logging

/// `flowdir jobserver`: a Replicate-compatible job API for your own GPU
/// box, and for tests and demos (docs/jobserver.md). Never open: clients
/// need its token (docs/security.md).
struct JobserverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobserver",
        abstract: "Serve a Replicate-compatible job API in front of cog servers and flowdir tools.",
        discussion: """
            Models are cog servers it starts and keeps running (--model owner/name=cog:DIR, DIR holding predict.py; \
            cog without Docker, from the venv of --cog-python), cog servers run elsewhere (--model owner/name=http://127.0.0.1:5000), \
            or the tool files of --tools DIR, as models tools/<Kind>. Clients send its token (Authorization: Bearer …): the one in \
            --token-file, else in DIR/token (made if missing). Predictions are kept as files under --dir, with an access log \
            (DIR/access.log); GET /v1/_stats says how many were made. --faults FILE injects 503s, 429s with Retry-After, delays, \
            dropped connections and non-JSON bodies (docs/jobserver.md). Stop it with Ctrl-C or SIGTERM.
            """
    )

    @Option(help: "Port to listen on (0: any free one, printed).")
    var port = 8700

    @Option(help: "Address to listen on; one that is not loopback needs --token-file.")
    var host = "127.0.0.1"

    @Option(name: .customLong("token-file"), help: "The file holding the token clients must send (made, mode 600, if missing). Default: DIR/token.")
    var tokenFile: String?

    @Option(name: .customLong("webhook-secret-file"), help: "A file holding the secret webhooks are signed with (whsec_…).")
    var webhookSecretFile: String?

    @Option(help: "Where predictions, files, the token and the access log are kept.")
    var dir = "jobserver-data"

    @Option(name: .customLong("model"), help: "A model: owner/name=cog:DIR (a cog server started here for the predictor in DIR), owner/name=http://127.0.0.1:5000 (one run elsewhere), or owner/name=tools/<Kind> (a tool of --tools). Repeatable.")
    var models: [String] = []

    @Option(help: "A folder of flowdir tool files, each served as model tools/<Kind>.")
    var tools: String?

    @Option(help: "A YAML file of faults to inject (docs/jobserver.md).")
    var faults: String?

    @Option(name: .customLong("rate-limit"), help: "Requests per minute per token before 429 Too Many Requests.")
    var rateLimit = 6000

    @Option(name: .customLong("file-lifetime"), help: "How long uploads and output files are served, then removed: seconds, or 30m, 1h, 2d.")
    var fileLifetime = "3600"

    @Option(help: "How long an ended prediction is kept (with its files), then removed: 7d, 12h, …")
    var keep = "7d"

    @Option(name: .customLong("max-predictions"), help: "How many predictions are kept at most (the oldest ended ones go first).")
    var maxPredictions = 10_000

    @Option(name: .customLong("max-upload"), help: "The largest upload taken (POST /v1/files): 1GB, 200MB, …")
    var maxUpload = "1GB"

    @Option(name: .customLong("public-url"), help: "How clients reach this server (http://gpu-box:8700): output URLs are made with it. Default: the address it listens on.")
    var publicURL: String?

    @Option(name: .customLong("cancel-timeout"), help: "How long cog has to end a prediction after its cancel before it is canceled here (and a cog server run here restarted).")
    var cancelTimeout = "30s"

    @Option(name: .customLong("cog-python"), help: "The venv whose python runs cog for --model NAME=cog:DIR. Default: $FLOWDIR_COG_VENV, else /opt/flowdir-cog.")
    var cogPython: String?

    @Option(name: .customLong("cog-start-timeout"), help: "How long a cog server started here has to become ready (its setup may load weights).")
    var cogStartTimeout = "5m"

    func run() async throws {
        var config = JobServerConfig(dir: Self.absolute(dir))
        config.host = host
        config.port = port
        guard (0...65535).contains(port) else { throw CommandError("--port \(port) is not a port", hint: "give 1-65535, or 0 for any free one") }
        guard (1...10_000_000).contains(rateLimit) else { throw CommandError("--rate-limit \(rateLimit) must be 1 to 10000000") }
        config.rateLimit = rateLimit
        config.fileLifetime = try Self.duration(fileLifetime, option: "--file-lifetime")
        config.keepPredictions = try Self.duration(keep, option: "--keep")
        guard (1...10_000_000).contains(maxPredictions) else { throw CommandError("--max-predictions \(maxPredictions) must be 1 to 10000000") }
        config.maxPredictions = maxPredictions
        config.maxUpload = try Self.size(maxUpload, option: "--max-upload")
        config.cogCancelTimeout = .milliseconds(Int64(try Self.duration(cancelTimeout, option: "--cancel-timeout") * 1000))
        config.cogStartTimeout = .milliseconds(Int64(try Self.duration(cogStartTimeout, option: "--cog-start-timeout") * 1000))
        config.cogPython = cogPython ?? ProcessInfo.processInfo.environment["FLOWDIR_COG_VENV"].flatMap { $0.isEmpty ? nil : $0 } ?? "/opt/flowdir-cog"
        if let publicURL {
            guard let u = URLComponents(string: publicURL), ["http", "https"].contains(u.scheme?.lowercased() ?? ""), u.host?.isEmpty == false,
                  u.query == nil, u.path.isEmpty || u.path == "/" else {
                throw CommandError("--public-url \(publicURL) is not http(s)://HOST[:PORT]", hint: "e.g. --public-url http://gpu-box:8700")
            }
            config.publicURL = publicURL
        }

        // Never open (docs/security.md): the token of --token-file, else one kept in DIR/token.
        guard JobServerConfig.isLoopback(host) || tokenFile != nil else {
            throw CommandError("refusing to serve \(host) (not a loopback address) without --token-file",
                               hint: "give --token-file FILE (made, mode 600, if missing) and hand its token to the clients, or serve 127.0.0.1", exitCode: 64)
        }
        let tokenPath = tokenFile.map(Self.absolute) ?? config.dir + "/token"
        do { try Files.makeDirectories(Path.directory(of: tokenPath)) } catch {
            throw CommandError("cannot make the folder of \(tokenPath): \(error)", hint: "give a --dir (or --token-file) you can write")
        }
        do { config.token = try TokenFile.readOrCreate(tokenPath) } catch { throw CommandError(error.description, hint: error.hint) }

        config.webhookSecret = try webhookSecretFile.map { try Self.secret($0, what: "--webhook-secret-file") }
        if let s = config.webhookSecret, s.hasPrefix("whsec_"), Data(base64Encoded: String(s.dropFirst(6))) == nil {
            throw CommandError("--webhook-secret-file \(webhookSecretFile ?? ""): the secret is not whsec_ followed by base64",
                               hint: "make one with: echo whsec_$(head -c 24 /dev/urandom | base64)")
        }
        for m in models {
            let parts = m.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, parts[0].split(separator: "/").count == 2,
                  parts[1].hasPrefix("http://") || parts[1].hasPrefix("https://") || parts[1].hasPrefix("tools/") || parts[1].hasPrefix("cog:") else {
                throw CommandError("--model '\(m)' is not owner/name=cog:DIR, owner/name=URL or owner/name=tools/<Kind>",
                                   hint: "e.g. --model acme/stylize=cog:examples/stylize-cog, a cog predictor folder")
            }
            if parts[1].hasPrefix("cog:") {
                let folder = Self.absolute(String(parts[1].dropFirst(4)))
                guard Files.exists(folder + "/predict.py") else {
                    throw CommandError("--model \(m): \(folder) has no predict.py", hint: "cog:DIR names a folder with predict.py and its class Predictor")
                }
                config.models[parts[0]] = "cog:" + folder
            } else {
                config.models[parts[0]] = parts[1]
            }
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
                // Where the token is, never the token: this line ends up in logs.
                Output.line("flowdir jobserver: clients send the token in \(tokenPath) (Authorization: Bearer …)")
                if shown.publicURL == nil, ["0.0.0.0", "::", "[::]", "*", ""].contains(shown.host) {
                    Output.line("flowdir jobserver: output URLs name 127.0.0.1; give --public-url http://THIS-HOST:\(port) for clients on other machines")
                }
            }
        } catch {
            throw CommandError("cannot serve on \(host):\(port): \(error)",
                               hint: "another program may use the port: pick another with --port (0 picks any free one)")
        }
    }

    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : Path.join(Files.currentDirectory, path)
    }

    /// Seconds (`3600`) or a duration (`30m`, `1h`, `7d`), within a year.
    static func duration(_ text: String, option: String) throws -> Double {
        let seconds = Double(text) ?? FlowDuration(parsing: text)?.seconds
        guard let seconds, seconds.isFinite, seconds > 0, seconds <= 366 * 86400 else {
            throw CommandError("\(option) \(text) is not a duration from 1s to a year", hint: "e.g. 90s, 30m, 1h, 7d")
        }
        return seconds
    }

    /// `1048576`, `512KB`, `200MB`, `1GB` (powers of 1024), within 1 TB.
    static func size(_ text: String, option: String) throws -> Int {
        let t = text.trimmingCharacters(in: .whitespaces).uppercased()
        var scale = 1.0
        var number = Substring(t)
        for (suffix, s) in [("KB", 1024.0), ("MB", 1_048_576.0), ("GB", 1_073_741_824.0), ("K", 1024.0), ("M", 1_048_576.0), ("G", 1_073_741_824.0), ("B", 1.0)]
        where t.hasSuffix(suffix) {
            scale = s
            number = t.dropLast(suffix.count)
            break
        }
        guard let n = Double(number.trimmingCharacters(in: .whitespaces)), n.isFinite, n * scale >= 1, n * scale <= 1_099_511_627_776 else {
            throw CommandError("\(option) \(text) is not a size from 1 byte to 1TB", hint: "e.g. 200MB, 1GB")
        }
        return Int(n * scale)
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
