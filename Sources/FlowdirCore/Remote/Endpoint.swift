/// A job API endpoint, as `endpoints:` in the config names it (docs/commands.md, "Config").
/// The token is not here: it comes from secrets.yaml or the environment,
/// and only the client holds it.
public struct EndpointConfig: Sendable, Equatable {
    public var name: String
    /// The API's base, e.g. `http://gpu-box:8700/v1` (Replicate: `https://api.replicate.com/v1`).
    public var url: String
    /// Seconds between status checks of a job.
    public var pollInterval: Double
    /// Every request to this endpoint counts (submits, polls, cancels, downloads).
    public var maxRequestsPerMinute: Int
    /// Input files larger than this many bytes go through the files API.
    public var inlineLimit: Int
    /// Where the backend can reach this machine's webhook receiver.
    public var webhook: String?
    /// Delays before each retry of a submit after a transient fault (seconds).
    public var retryDelays: [Double]
    /// The longest a polling or download backoff grows to (seconds).
    public var maxBackoff: Double
    /// The first polling or download backoff (seconds).
    public var firstBackoff: Double
    /// Multiplies every delay the server asks for (`Retry-After`), so tests
    /// and demos run with the seed's numbers scaled down; 1 in real use.
    public var delayScale: Double
    /// How long one request may take before it counts as a timeout (seconds).
    public var requestTimeout: Double
    /// How long a create may be held for the job to end (`Prefer: wait`,
    /// seconds; 0: never). What is asked is `createWait`.
    public var syncWait: Double

    public init(name: String, url: String, pollInterval: Double = 10, maxRequestsPerMinute: Int = 600,
                inlineLimit: Int = 256 * 1024, webhook: String? = nil, retryDelays: [Double] = [30, 120, 120],
                maxBackoff: Double = 300, firstBackoff: Double = 1, delayScale: Double = 1, requestTimeout: Double = 30,
                syncWait: Double = 25) {
        self.name = name
        self.url = url
        self.pollInterval = pollInterval
        self.maxRequestsPerMinute = maxRequestsPerMinute
        self.inlineLimit = inlineLimit
        self.webhook = webhook
        self.retryDelays = retryDelays
        self.maxBackoff = maxBackoff
        self.firstBackoff = firstBackoff
        self.delayScale = delayScale
        self.requestTimeout = requestTimeout
        self.syncWait = syncWait
    }

    /// The whole seconds a create asks to be held (`Prefer: wait=N`; 0: not
    /// asked): `syncWait`, at most Replicate's 60 s, and always short of
    /// `requestTimeout` (by 5 s, or half of a shorter one), so the answer
    /// after the wait comes before the request counts as timed out.
    public var createWait: Int {
        let room = requestTimeout - min(5, requestTimeout / 2)
        let seconds = min(syncWait, room, Double(PreferWait.longest))
        return seconds.isFinite && seconds >= 1 ? Int(seconds.rounded(.down)) : 0
    }

    /// `FLOWDIR_TOKEN_<NAME>`: the name upper-cased, anything but letters and digits as `_`.
    public var tokenVariable: String { "FLOWDIR_TOKEN_" + variableSuffix }

    /// `FLOWDIR_WEBHOOK_SECRET_<NAME>`, the same way.
    public var webhookSecretVariable: String { "FLOWDIR_WEBHOOK_SECRET_" + variableSuffix }

    var variableSuffix: String {
        String(name.uppercased().map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "_" })
    }
}
