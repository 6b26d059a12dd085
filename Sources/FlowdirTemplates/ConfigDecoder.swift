import FlowdirCore

/// Reads the user's config file. Keys this flowdir does not know yet are
/// left alone (a newer flowdir may have written them); wrong values are errors.
public enum ConfigDecoder {
    public static func decode(_ bytes: [UInt8], file: String, home: String) -> Result<FlowdirConfig, Diagnostic> {
        // An empty or comment-only file is a config with every default (DESIGN.md §10).
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
                guard let text = entry.value.stringValue ?? entry.value.numberValue.map({ "\(ParamValue.plainNumber($0))s" }),
                      let d = FlowDuration(parsing: text), d.seconds > 0 else {
                    return fail(entry, "`hookTimeout` must be a duration like 30s or 2m")
                }
                config.hookTimeout = d.seconds
            }
            if let entry = doc[key: "notifications"] {
                guard case .bool(let b) = entry.value else { return fail(entry, "`notifications` must be true or false") }
                config.desktopNotifications = b
            }
            if let entry = doc[key: "answerSizeLimit"] {
                guard let size = byteSize(entry.value), size > 0 else {
                    return fail(entry, "`answerSizeLimit` must be a size like 200MB, 1GB or a number of bytes")
                }
                config.answerSizeLimit = size
            }
            return .success(config)
        }
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

    /// `1048576`, `512KB`, `200MB`, `1.5GB` (powers of 1024).
    static func byteSize(_ v: ParamValue) -> Int? {
        if case .int(let i) = v { return i }
        guard let text = v.stringValue?.trimmed().uppercased() else { return nil }
        let units: [(String, Double)] = [("KIB", 1024), ("MIB", 1_048_576), ("GIB", 1_073_741_824), ("KB", 1024), ("MB", 1_048_576),
                                         ("GB", 1_073_741_824), ("K", 1024), ("M", 1_048_576), ("G", 1_073_741_824), ("B", 1)]
        for (suffix, scale) in units where text.hasSuffix(suffix) {
            guard let n = Double(text.dropLast(suffix.count).trimmed()), n >= 0 else { return nil }
            return Int(n * scale)
        }
        return Int(text)
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
