import FlowdirCore

/// Reads the user's config file. Keys this flowdir does not know yet are
/// left alone (a newer flowdir may have written them); wrong values are errors.
public enum ConfigDecoder {
    public static func decode(_ bytes: [UInt8], file: String, home: String) -> Result<FlowdirConfig, Diagnostic> {
        switch InstanceCodec.document(bytes, file: file) {
        case .failure(let d): return .failure(d)
        case .success(let doc):
            var config = FlowdirConfig()
            for (key, list) in [("roots", \FlowdirConfig.roots), ("toolPaths", \FlowdirConfig.toolPaths)] {
                guard let entry = doc[key: key] else { continue }
                guard case .array(let items) = entry.value, items.allSatisfy({ $0.stringValue != nil }) else {
                    return .failure(.error(.malformedFile, "`\(key)` must be a list of folders", at: entry.location ?? SourceLocation(file: file, line: 1, column: 1)))
                }
                config[keyPath: list] = items.compactMap(\.stringValue).map { expand($0, home: home) }
            }
            return .success(config)
        }
    }

    /// `~/flows` → `/home/me/flows`.
    static func expand(_ path: String, home: String) -> String {
        if path == "~" { return home }
        if path.hasPrefix("~/") { return home + path.dropFirst(1) }
        return path
    }
}
