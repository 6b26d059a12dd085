import FlowdirCore

/// Reads the user's config file. Keys this flowdir does not know yet are
/// left alone (a newer flowdir may have written them); wrong values are errors.
public enum ConfigDecoder {
    /// - Parameter backends: each may have a section of its own (`slurm: { pollInterval: 10s }`),
    ///   checked by it and kept as written (`FlowdirConfig.backendSettings`).
    public static func decode(_ bytes: [UInt8], file: String, home: String, backends: [any BackendSyntax]) -> Result<FlowdirConfig, Diagnostic> {
        // An empty or comment-only file is a config with every default
        // (docs/commands.md, "Config").
        if isBlank(bytes) || isNullDocument(bytes) { return .success(FlowdirConfig()) }
        switch InstanceCodec.document(bytes, file: file) {
        case .failure(var d):
            d.hint = "the config is a YAML mapping (roots, toolPaths, hooks, hookTimeout, …); an empty file means every default"
            return .failure(d)
        case .success(let doc):
            var config = FlowdirConfig()
            func fail(_ entry: ParamEntry, _ message: String) -> Result<FlowdirConfig, Diagnostic> {
                .failure(.error(.malformedFile, message, at: entry.location ?? SourceLocation(file: file, line: 1, column: 1)))
            }
            for (key, list) in [("roots", \FlowdirConfig.roots), ("toolPaths", \FlowdirConfig.toolPaths)] {
                guard let entry = doc[key: key] else { continue }
                guard case .array(let items) = entry.value, items.allSatisfy({ $0.stringValue != nil }) else {
                    return fail(entry, "`\(key)` must be a list of folders")
                }
                config[keyPath: list] = items.compactMap(\.stringValue).map { expand($0, home: home) }
            }
            if let entry = doc[key: "hooks"] {
                guard case .object(let events) = entry.value else {
                    return fail(entry, "`hooks` must map events (await, failed, done) to commands")
                }
                for e in events {
                    guard let kind = FlowEvent.Kind(rawValue: e.key) else {
                        return fail(e.location == nil ? entry : e, "`hooks` has no event '\(e.key)'; events are await, failed, done")
                    }
                    guard let commands = argvList(e.value) else {
                        return fail(e.location == nil ? entry : e,
                                    "`hooks.\(e.key)` must be a command as an argv list ([notify, \"--flag\"]) or a list of them")
                    }
                    config.hooks[kind] = commands
                }
            }
            if let entry = doc[key: "hookTimeout"] {
                guard let s = seconds(entry.value), s > 0 else {
                    return fail(entry, "`hookTimeout` must be a duration like 30s or 2m" + tooLong(entry.value))
                }
                config.hookTimeout = s
            }
            if let entry = doc[key: "notifications"] {
                guard case .bool(let b) = entry.value else { return fail(entry, "`notifications` must be true or false") }
                config.desktopNotifications = b
            }
            if let entry = doc[key: "answerSizeLimit"] {
                guard let size = byteSize(entry.value), size > 0 else {
                    return fail(entry, "`answerSizeLimit` must be a size like 200MB, 1GB or a number of bytes, at most 1TB")
                }
                config.answerSizeLimit = size
            }
            if let entry = doc[key: "storage"] {
                guard case .object(let fields) = entry.value else {
                    return fail(entry, "`storage` must be a mapping: { bigFile: 512KB, thumbnails: 200MB }")
                }
                for f in fields {
                    guard f.key == "bigFile" || f.key == "thumbnails" else {
                        return fail(f.location == nil ? entry : f, "`storage.\(f.key)`: only `bigFile` and `thumbnails`, each a size like 512KB")
                    }
                    guard let size = byteSize(f.value), size > 0 else {
                        return fail(f.location == nil ? entry : f, "`storage.\(f.key)` must be a size like 512KB, 2MB or a number of bytes, at most 1TB")
                    }
                    if f.key == "bigFile" { config.bigFile = size } else { config.thumbnails = size }
                }
            }
            if let entry = doc[key: "concurrency"] {
                guard case .object(let caps) = entry.value else { return fail(entry, "`concurrency` must be a mapping: { local: 2, remote: 8 }") }
                for cap in caps {
                    guard case .int(let n) = cap.value, (1...maximumCount).contains(n), cap.key == "local" || cap.key == "remote" else {
                        return fail(cap.location == nil ? entry : cap, "`concurrency.\(cap.key)`: only `local` and `remote`, each a whole number from 1 to \(maximumCount)")
                    }
                    if cap.key == "local" { config.localConcurrency = n } else { config.remoteConcurrency = n }
                }
            }
            for backend in backends {
                guard let entry = doc[key: backend.key] else { continue }
                if let problem = backend.checkSettings(entry, file: file) { return .failure(problem) }
                if case .object(let fields) = entry.value { config.backendSettings[backend.key] = fields }
            }
            if let entry = doc[key: "sync"] {
                guard case .object(let fields) = entry.value else { return fail(entry, "`sync` must be a mapping: { every: 5m, remote: origin }") }
                config.syncEnabled = true
                for f in fields {
                    switch f.key {
                    case "every":
                        guard let s = seconds(f.value), s > 0 else {
                            return fail(f, "`sync.every` must be a duration like 5m" + tooLong(f.value))
                        }
                        config.syncEvery = s
                    case "lease":
                        guard let s = seconds(f.value), s > 0 else {
                            return fail(f, "`sync.lease` must be a duration like 10m" + tooLong(f.value))
                        }
                        config.leaseDuration = s
                    case "remote":
                        guard let r = f.value.stringValue, !r.isEmpty, !r.hasPrefix("-") else { return fail(f, "`sync.remote` must name a git remote, like origin") }
                        config.syncRemote = r
                    default:
                        return fail(f, "`sync` takes `every`, `remote` and `lease`, not `\(f.key)`")
                    }
                }
            }
            if let entry = doc[key: "webhookListen"] {
                guard let a = entry.value.stringValue, !a.isEmpty, !a.contains(where: { $0.isWhitespace || $0 == "/" }) else {
                    return fail(entry, "`webhookListen` must be an address to listen on, like 0.0.0.0, :: or 192.168.1.5")
                }
                config.webhookListen = a
            }
            if let entry = doc[key: "endpoints"] {
                guard case .object(let named) = entry.value else {
                    return fail(entry, "`endpoints` must map names to endpoints: { gpu: { url: http://gpu-box:8700/v1 } }")
                }
                for e in named {
                    switch endpoint(e, file: file) {
                    case .success(let ep): config.endpoints[e.key] = ep
                    case .failure(let d): return .failure(d)
                    }
                }
            }
            return .success(config)
        }
    }

    /// One entry of `endpoints:`. A token here is refused: secrets go in secrets.yaml.
    static func endpoint(_ e: ParamEntry, file: String) -> Result<EndpointConfig, Diagnostic> {
        let at = e.location ?? SourceLocation(file: file, line: 1, column: 1)
        func fail(_ entry: ParamEntry?, _ message: String, hint: String? = nil) -> Result<EndpointConfig, Diagnostic> {
            var d = Diagnostic.error(.malformedFile, message, at: entry?.location ?? at)
            d.hint = hint
            return .failure(d)
        }
        guard case .object(let fields) = e.value else { return fail(e, "endpoint '\(e.key)' must be a mapping with at least `url:`") }
        guard let url = fields[key: "url"]?.value.stringValue, let rest = ["http://", "https://"].first(where: url.hasPrefix).map({ url.dropFirst($0.count) }),
              let host = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first, !host.isEmpty, !host.hasPrefix(":"),
              !url.contains(where: \.isWhitespace) else {
            return fail(fields[key: "url"] ?? e, "endpoint '\(e.key)' needs `url:` (http:// or https:// and a host), e.g. http://gpu-box:8700/v1")
        }
        var ep = EndpointConfig(name: e.key, url: url)
        for f in fields {
            switch f.key {
            case "url": break
            case "token", "webhookSecret":
                // The message names the key, never its value: the value is the secret.
                let variable = f.key == "token" ? ep.tokenVariable : ep.webhookSecretVariable
                return fail(f, "endpoint '\(e.key)' has `\(f.key)` in the config, which is not a secret's place",
                            hint: "move it to ~/.config/flowdir/secrets.yaml (mode 0600) under endpoints: { \(e.key): { \(f.key): … } }, or set \(variable)")
            case "pollInterval", "firstBackoff", "maxBackoff", "requestTimeout":
                guard let s = seconds(f.value), s > 0 else {
                    return fail(f, "`\(f.key)` of endpoint '\(e.key)' must be a duration like 10s or 2m" + tooLong(f.value))
                }
                switch f.key {
                case "pollInterval": ep.pollInterval = s
                case "firstBackoff": ep.firstBackoff = s
                case "maxBackoff": ep.maxBackoff = s
                default: ep.requestTimeout = s
                }
            case "syncWait":
                guard let s = seconds(f.value), s >= 0, s <= Double(PreferWait.longest) else {
                    return fail(f, "`syncWait` of endpoint '\(e.key)' must be a duration from 0s (never wait) to 60s, like 25s")
                }
                ep.syncWait = s
            case "maxRequestsPerMinute":
                guard case .int(let n) = f.value, (1...maximumCount).contains(n) else {
                    return fail(f, "`maxRequestsPerMinute` of endpoint '\(e.key)' must be a whole number from 1 to \(maximumCount)")
                }
                ep.maxRequestsPerMinute = n
            case "inlineLimit":
                guard let n = byteSize(f.value), n >= 0 else { return fail(f, "`inlineLimit` of endpoint '\(e.key)' must be a size like 256KB, at most 1TB") }
                ep.inlineLimit = n
            case "webhook":
                guard let w = f.value.stringValue, w.hasPrefix("http://") || w.hasPrefix("https://"),
                      !w.contains(where: { $0 == "?" || $0 == "#" || $0.isWhitespace }) else {
                    return fail(f, "`webhook` of endpoint '\(e.key)' must be a URL where the backend can reach this machine, "
                                + "without a query (e.g. http://laptop:8701/hooks)")
                }
                ep.webhook = w
            case "retryDelays":
                guard case .array(let items) = f.value, !items.isEmpty else {
                    return fail(f, "`retryDelays` of endpoint '\(e.key)' must be a list of durations, e.g. [30s, 2m, 2m]")
                }
                var delays: [Double] = []
                for item in items {
                    guard let s = seconds(item) else {
                        return fail(f, "`retryDelays` of endpoint '\(e.key)' must be a list of durations, e.g. [30s, 2m, 2m]" + tooLong(item))
                    }
                    delays.append(s)
                }
                ep.retryDelays = delays
            case "delayScale":
                guard let n = f.value.numberValue, n > 0, n <= 1000 else {
                    return fail(f, "`delayScale` of endpoint '\(e.key)' must be a number above 0, at most 1000")
                }
                ep.delayScale = n
            default:
                break  // a newer flowdir's key
            }
        }
        return .success(ep)
    }

    /// `[cmd, arg]` (one command) or `[[cmd, arg], [cmd2]]` (several).
    static func argvList(_ v: ParamValue) -> [[String]]? {
        guard case .array(let items) = v, !items.isEmpty else { return nil }
        if items.allSatisfy({ $0.stringValue != nil }) { return [items.compactMap(\.stringValue)] }
        var out: [[String]] = []
        for item in items {
            guard case .array(let argv) = item, !argv.isEmpty, argv.allSatisfy({ $0.stringValue != nil }) else { return nil }
            out.append(argv.compactMap(\.stringValue))
        }
        return out
    }

    /// The largest count a config takes (`concurrency`, `maxRequestsPerMinute`).
    static let maximumCount = 1_000_000

    /// The largest size a config takes: 1 TB. Past it, an error names the key.
    static let maximumSize = 1 << 40

    /// A size as a person types it on the command line (`--to 10GB`), read as the config reads one.
    public static func size(_ text: String) -> Int? { byteSize(.string(text)) }

    /// `1048576`, `512KB`, `200MB`, `1.5GB`, `1TB` (powers of 1024), at most
    /// `maximumSize`; digits with an optional fraction (never `nan`, `inf`
    /// or an exponent), so the product is always a whole number in range.
    static func byteSize(_ v: ParamValue) -> Int? {
        if case .int(let i) = v { return (0...maximumSize).contains(i) ? i : nil }
        guard let text = v.stringValue?.trimmed().uppercased() else { return nil }
        let units: [(String, Double)] = [("KIB", 1024), ("MIB", 1_048_576), ("GIB", 1_073_741_824), ("TIB", 1_099_511_627_776),
                                         ("KB", 1024), ("MB", 1_048_576), ("GB", 1_073_741_824), ("TB", 1_099_511_627_776),
                                         ("K", 1024), ("M", 1_048_576), ("G", 1_073_741_824), ("T", 1_099_511_627_776), ("B", 1)]
        var number = Substring(text), scale = 1.0
        if let (suffix, s) = units.first(where: { text.hasSuffix($0.0) }) {
            number = text.dropLast(suffix.count)
            scale = s
        }
        guard let n = FlowDuration.decimal(number.trimmed()) else { return nil }
        let bytes = (n * scale).rounded(.down)
        return bytes <= Double(maximumSize) ? Int(bytes) : nil
    }

    /// A duration as a config gives it: `10s`, `PT1M`, or a number of
    /// seconds; never negative, never past `FlowDuration.maximumSeconds`.
    static func seconds(_ v: ParamValue) -> Double? {
        if let n = v.numberValue { return FlowDuration.checkedSeconds(n) }
        return v.stringValue.flatMap(FlowDuration.init(parsing:))?.seconds
    }

    /// "(…: longer than the 100 years flowdir allows)" when that is why
    /// `v` was refused, else nothing.
    static func tooLong(_ v: ParamValue) -> String {
        if let n = v.numberValue, n.isFinite, n > FlowDuration.maximumSeconds { return " (at most 100 years)" }
        if let t = v.stringValue, case .failure(.tooLong) = FlowDuration.parse(t) { return " (at most 100 years)" }
        return ""
    }

    /// `~/flows` → `/home/me/flows`.
    static func expand(_ path: String, home: String) -> String {
        if path == "~" { return home }
        if path.hasPrefix("~/") { return home + path.dropFirst(1) }
        return path
    }

    /// A document YAML reads as nothing at all: `--- # my config`, `~`,
    /// `null`, `%YAML 1.2` and `---`. A file YAML cannot read is not one: its
    /// error is reported.
    static func isNullDocument(_ bytes: [UInt8]) -> Bool {
        let body = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(bytes.dropFirst(3)) : bytes
        do {
            guard let value = try YAMLReader.parse(body, file: "config.yaml") else { return true }
            if case .null = value.kind { return true }
            return false
        } catch {
            return false
        }
    }

    /// Nothing but blank lines, comments and YAML's document markers.
    static func isBlank(_ bytes: [UInt8]) -> Bool {
        String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).allSatisfy { line in
            let t = line.drop { $0 == " " || $0 == "\t" || $0 == "\u{FEFF}" }
            return t.isEmpty || t.hasPrefix("#") || t.hasPrefix("---") && t.dropFirst(3).allSatisfy(\.isWhitespace)
                || t.hasPrefix("...") && t.dropFirst(3).allSatisfy(\.isWhitespace)
        }
    }
}
