import FlowdirCore
import Foundation

/// Which endpoints' webhooks this machine receives, where it listens, and
/// what it says about the rest — decided from the config alone (pure; the
/// caller says which addresses a host name is on this machine).
///
/// - Only an endpoint with a webhook secret gets a receiver (an unsigned
///   webhook is never believed, so listening for it only opens a port).
/// - The receiver binds the address the webhook URL names when it is this
///   machine's (a loopback name or address, or one of its interfaces);
///   `webhookListen:` in the config says where to listen instead (e.g.
///   `0.0.0.0` behind a port forward). Otherwise it does not listen.
/// - Each endpoint's route is its exact path, `<URL path>/<endpoint>`.
public struct WebhookPlan: Sendable, Equatable {
    public var host: String
    public var port: Int
    /// Path → endpoint.
    public var routes: [String: String]

    public init(host: String, port: Int, routes: [String: String]) {
        self.host = host
        self.port = port
        self.routes = routes
    }

    /// The plan, or nil when nothing is to be received; `notes` says why
    /// an endpoint's webhooks are not received, and how to change that.
    /// - Parameters:
    ///   - local: the addresses of this machine that `host` names (empty:
    ///     none; a loopback name or address is known without it).
    public static func make(endpoints: [EndpointConfig], hasSecret: (String) -> Bool, listen: String?,
                            local: (String) -> [String]) -> (plan: WebhookPlan?, notes: [String]) {
        var notes: [String] = []
        var plan: WebhookPlan?
        var bound: (host: String, port: Int)?
        for e in endpoints.sorted(by: { $0.name < $1.name }) {
            guard let webhook = e.webhook else { continue }
            guard hasSecret(e.name) else {
                notes.append("endpoint '\(e.name)' has `webhook:` but no webhook secret, so no receiver is started for it "
                             + "(its jobs are polled): set `endpoints: { \(e.name): { webhookSecret: whsec_… } }` in secrets.yaml, "
                             + "or \(e.webhookSecretVariable)")
                continue
            }
            guard let url = URLComponents(string: webhook), let host = url.host, !host.isEmpty, let port = url.port,
                  (1...65535).contains(port) else {
                notes.append("endpoint '\(e.name)': webhook \(webhook) needs a host and a port (e.g. http://laptop:8701/hooks); its jobs are polled")
                continue
            }
            if let b = bound, b.host != host.lowercased() || b.port != port {
                notes.append("endpoint '\(e.name)': webhook \(webhook) is not on \(b.host):\(b.port), where this machine receives "
                             + "webhooks (one address and port for all endpoints); its jobs are polled")
                continue
            }
            let path = (url.path.hasSuffix("/") ? String(url.path.dropLast()) : url.path) + "/" + e.name
            if var p = plan {
                p.routes[path] = e.name
                plan = p
                continue
            }
            let address: String
            if let listen, !listen.isEmpty {
                address = listen
            } else if let a = loopback(host) {
                address = a
            } else if let a = local(host).first {
                address = a
            } else {
                notes.append("endpoint '\(e.name)': webhook host \(host) is not an address of this machine, so flowdir does not "
                             + "listen for it (its jobs are polled); if it reaches this machine (a port forward, a tunnel), set "
                             + "`webhookListen: 0.0.0.0` (or the address to listen on) in the config")
                continue
            }
            bound = (host.lowercased(), port)
            plan = WebhookPlan(host: address, port: port, routes: [path: e.name])
        }
        return (plan, notes)
    }

    /// `localhost`, `127.x.y.z`, `::1`: where a loopback webhook is received.
    static func loopback(_ host: String) -> String? {
        let h = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if h == "localhost" || h.hasSuffix(".localhost") { return "127.0.0.1" }
        if h == "::1" { return "::1" }
        let parts = h.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 4, parts[0] == "127", parts.allSatisfy({ UInt8($0) != nil }) { return h }
        return nil
    }
}
