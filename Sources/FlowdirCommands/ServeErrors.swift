import FlowdirCore
import FlowdirIO
import FlowdirRuntime
import FlowdirPages
import Logging

/// What a page is told when an action or a view fails: flowdir's own
/// words (the commands' messages and hints, which are written for people),
/// never a Swift error's dump of an internal type, nor the lines of a file.
/// Anything else is "an internal error", and the detail goes to the log.
enum ServeErrors {
    static func ui(_ error: any Error, status: Int, logger: Logger) -> UIError {
        switch error {
        case let e as UIError: return e
        case let e as CommandError: return UIError(e.exitCode == 75 ? 503 : status, e.message, hint: e.hint)
        case let e as InstanceError:
            switch e {
            case .malformed(let d):
                // The diagnostic without the quoted line.
                return UIError(status, plain(d), hint: d.hint)
            case .invalidWorkflow(let path, let diagnostics, _):
                let first = diagnostics.errors.sortedByLocation().first.map { ": " + plain($0) } ?? ""
                return UIError(status, "\(path)'s workflow is invalid" + first, hint: "`flowdir check \(path)` lists every problem")
            default: return UIError(status, e.description)
            }
        case let e as InstanceLock.Busy: return UIError(503, e.description, hint: "try again in a moment")
        case let e as FileSystemError: return UIError(status, e.description)
        case let e as GitError: return UIError(status, e.description)
        case let e as CommitFailure: return UIError(status, e.description)
        case let e as EngineError: return UIError(status, e.description)
        case let e as AwaitPolicy.Refusal: return UIError(status, e.description)
        case let e as Errno: return UIError(status, e.description)
        default:
            logger.error("internal error", metadata: ["error": "\(error)"])
            return UIError(500, "flowdir serve could not do that (an internal error)", hint: "its log says more")
        }
    }

    /// A diagnostic's place and words, without the file's line or the hint.
    static func plain(_ d: Diagnostic) -> String {
        var d = d
        d.hint = nil
        return DiagnosticRenderer().render(d)
    }
}
