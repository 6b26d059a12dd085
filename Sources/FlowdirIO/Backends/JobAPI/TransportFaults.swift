#if canImport(Glibc)
import Glibc
#endif
import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// A request that got no HTTP answer, classified by the error's type (not
/// its words): whether a send is retried (docs/templates-and-tools.md,
/// `run.http`) follows from the case.
extension JobAPIError {
    static func transport(_ error: any Error, timeout: Double, limit: Int) -> JobAPIError {
        switch error {
        case let e as HTTPClientError:
            return fromClient(e, timeout: timeout)
        case let e as NIOConnectionError:
            // Every address tried (or none found): nothing answers there.
            if e.dnsAError != nil || e.dnsAAAAError != nil, e.connectionErrors.isEmpty {
                return .unreachable("cannot resolve \(e.host)")
            }
            if let first = e.connectionErrors.first {
                return .unreachable("cannot connect to \(e.host):\(e.port): \(describe(first.error))")
            }
            return .unreachable("cannot connect to \(e.host):\(e.port)")
        case let e as IOError:
            return fromErrno(e.errnoCode, describe(e), timeout: timeout)
        case let e as ChannelError:
            switch e {
            case .connectTimeout: return .unreachable("no connection within the connect timeout")
            case .writeHostUnreachable: return .unreachable("host unreachable")
            default: return .reset("the connection closed (\(e))")
            }
        case is NIOTooManyBytesError:
            // The caller's limit, not a fault of the wire: trying again gives the same.
            return .tooLarge(limit: limit)
        case let e as HTTPParserError:
            // The connection ended inside an answer: a drop, as a reset is.
            if e == .invalidEOFState || e == .closedConnection { return .reset("the answer was cut off") }
            return .notAPI(status: 0, snippet: "the server's answer is not HTTP (\(e))")
        case let e as NIOSSLError:
            return .tls("\(e)")
        case let e as BoringSSLError:
            return .tls("\(e)")
        case is CancellationError:
            return .reset("the request was cancelled")
        default:
            // Unknown: taken as a drop, which is tried again and never
            // fails a running job by itself; its words say what it was.
            return .reset(JobAPIClient.clean("\(error)"))
        }
    }

    static func fromClient(_ e: HTTPClientError, timeout: Double) -> JobAPIError {
        switch e {
        case .deadlineExceeded, .readTimeout, .writeTimeout:
            return .timeout(seconds: timeout)
        case .connectTimeout, .getConnectionFromPoolTimeout:
            return .unreachable("no connection within the connect timeout")
        case .tlsHandshakeTimeout:
            return .unreachable("no TLS handshake within the connect timeout")
        case .socksHandshakeTimeout, .httpProxyHandshakeTimeout, .invalidProxyResponse, .proxyAuthenticationRequired:
            return .unreachable("the proxy did not let the request through (\(e.shortDescription))")
        case .remoteConnectionClosed, .uncleanShutdown, .bodyLengthMismatch, .cancelled:
            return .reset("the server closed the connection before answering in full")
        case .invalidURL, .emptyHost, .emptyScheme, .missingSocketPath:
            return .notAPI(status: 0, snippet: "not a URL flowdir can fetch")
        case .redirectLimitReached, .redirectCycleDetected:
            return .notAPI(status: 0, snippet: "redirected in circles")
        default:
            if e.shortDescription.lowercased().contains("unsupported scheme") {
                return .notAPI(status: 0, snippet: "not an http:// or https:// URL")
            }
            return .reset(e.shortDescription)
        }
    }

    static func fromErrno(_ code: CInt, _ words: String, timeout: Double) -> JobAPIError {
        switch code {
        case ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, EHOSTDOWN, ENETDOWN, EADDRNOTAVAIL:
            return .unreachable(words)
        case ETIMEDOUT:
            return .timeout(seconds: timeout)
        default:
            // ECONNRESET, EPIPE, ECONNABORTED and the rest: the connection went away under the request.
            return .reset(words)
        }
    }

    /// An underlying error in a few words: `connection refused`, not a struct dump.
    static func describe(_ error: any Error) -> String {
        if let e = error as? IOError {
            return String(cString: strerror(e.errnoCode)).lowercased()
        }
        return JobAPIClient.clean("\(error)")
    }
}
