#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirTemplates

/// API tokens and webhook secrets (DESIGN.md §10): only in secrets.yaml
/// (mode 0600) or the environment; never in an instance, a log, a run
/// record or an error. Printing this prints no secret.
public struct Secrets: Sendable, CustomStringConvertible {
    public struct Refused: Error, CustomStringConvertible, Sendable {
        public var description: String
        public var hint: String
    }

    var tokens: [String: String] = [:]
    var webhookSecrets: [String: String] = [:]

    public init() {}

    public func token(for endpoint: String) -> String? { tokens[endpoint] }
    public func webhookSecret(for endpoint: String) -> String? { webhookSecrets[endpoint] }

    public var description: String { "secrets for \(Set(tokens.keys).union(webhookSecrets.keys).sorted().joined(separator: ", ")) (not shown)" }

    /// The file at `path` (absent: none) and the environment, which wins:
    /// `FLOWDIR_TOKEN_<ENDPOINT>`, `FLOWDIR_WEBHOOK_SECRET_<ENDPOINT>`.
    public static func load(path: String, environment: [String: String], endpoints: [String]) throws(Refused) -> Secrets {
        var s = Secrets()
        var st = stat()
        if stat(path, &st) == 0 {
            if st.st_mode & 0o077 != 0 {
                throw Refused(description: "\(path) can be read by others (mode \(String(st.st_mode & 0o777, radix: 8))): flowdir does not use a secrets file others can read",
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
                    if let t = fields[key: "token"]?.value.stringValue { s.tokens[e.key] = t }
                    if let w = fields[key: "webhookSecret"]?.value.stringValue { s.webhookSecrets[e.key] = w }
                }
            }
        }
        for name in endpoints {
            let variable = EndpointConfig(name: name, url: "").tokenVariable
            if let t = environment[variable], !t.isEmpty { s.tokens[name] = t }
            let secretVariable = "FLOWDIR_WEBHOOK_SECRET_" + variable.dropFirst("FLOWDIR_TOKEN_".count)
            if let w = environment[secretVariable], !w.isEmpty { s.webhookSecrets[name] = w }
        }
        return s
    }

    /// Every secret's value, for checking that none was written anywhere.
    public var values: [String] { Array(tokens.values) + Array(webhookSecrets.values) }
}
