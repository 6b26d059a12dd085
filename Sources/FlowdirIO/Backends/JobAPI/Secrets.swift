#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirTemplates

/// API tokens and webhook secrets (docs/commands.md, "Config"): only in secrets.yaml
/// (mode 0600) or the environment; never in an instance, a log, a run
/// record or an error. Printing this prints no secret.
public struct Secrets: Sendable, CustomStringConvertible, CustomReflectable {
    public struct Refused: Error, CustomStringConvertible, Sendable {
        public var description: String
        public var hint: String
    }

    var tokens: [String: String] = [:]
    var webhookSecrets: [String: String] = [:]

    public init() {}

    public func token(for endpoint: String) -> String? { tokens[endpoint] }
    public func webhookSecret(for endpoint: String) -> String? { webhookSecrets[endpoint] }

    public var description: String { "secrets for \(names.joined(separator: ", ")) (not shown)" }

    /// `dump` and a failed test's report show the endpoints' names only.
    public var customMirror: Mirror { Mirror(self, children: ["endpoints": names], displayStyle: .struct) }

    var names: [String] { Set(tokens.keys).union(webhookSecrets.keys).sorted() }

    /// The file at `path` (absent: none) and the environment, which wins:
    /// `FLOWDIR_TOKEN_<ENDPOINT>`, `FLOWDIR_WEBHOOK_SECRET_<ENDPOINT>`.
    public static func load(path: String, environment: [String: String], endpoints: [String]) throws(Refused) -> Secrets {
        var s = Secrets()
        var st = stat()
        if stat(path, &st) == 0 {
            // Group or others may read it, or change it (and so swap a token for theirs).
            if st.st_mode & 0o077 != 0 {
                let mode = String(st.st_mode & 0o777, radix: 8)
                throw Refused(description: "\(path) can be read or changed by others (mode 0\(mode)): flowdir does not use a secrets file others can open",
                              hint: "chmod 600 \(path)")
            }
            guard let bytes = try? LocalFileSystem().readFile(path, limit: 1 << 20) else {
                throw Refused(description: "cannot read \(path)", hint: "check that it is a file you can read")
            }
            let doc: [ParamEntry]
            switch InstanceCodec.document(bytes, file: path) {
            case .success(let d): doc = d
            case .failure(let d):
                // Only where: the line may hold a secret.
                throw Refused(description: "\(path) is not valid YAML (line \(d.location?.line ?? 0))",
                              hint: "it is `endpoints: { NAME: { token: …, webhookSecret: … } }`")
            }
            if case .object(let named)? = doc[key: "endpoints"]?.value {
                for e in named {
                    guard case .object(let fields) = e.value else { continue }
                    for key in ["token", "webhookSecret"] {
                        guard let v = fields[key: key]?.value, v != .null else { continue }
                        // YAML reads 0123 as a number, and a number is not the token that was meant.
                        guard let text = v.stringValue else {
                            throw Refused(description: "the \(key) of endpoint '\(e.key)' in \(path) is not a string (YAML read it as \(v.typeName))",
                                          hint: "quote it: \(key): \"…\"")
                        }
                        if key == "token" { s.tokens[e.key] = text } else { s.webhookSecrets[e.key] = text }
                    }
                }
            }
        }
        for name in endpoints {
            let endpoint = EndpointConfig(name: name, url: "")
            if let t = environment[endpoint.tokenVariable], !t.isEmpty { s.tokens[name] = t }
            if let w = environment[endpoint.webhookSecretVariable], !w.isEmpty { s.webhookSecrets[name] = w }
        }
        return s
    }

    /// Every secret's value, for checking that none was written anywhere.
    public var values: [String] { Array(tokens.values) + Array(webhookSecrets.values) }
}
