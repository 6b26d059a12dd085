import FlowdirCore

/// What can go wrong with an instance, said so a person knows what to do.
public enum InstanceError: Error, CustomStringConvertible {
    case notAnInstance(String)
    case newerSchema(path: String, found: Int)
    case malformed(Diagnostic)
    case invalidWorkflow(path: String, diagnostics: [Diagnostic], sources: [String: String])
    case exists(String)
    case notFound(String, candidates: [String])
    case ambiguous(String, matches: [String])
    case badOverride(String, reason: String)
    /// HEAD names a branch with no commit, in an instance that has been created.
    case headMissing(path: String, branch: String, branches: [String])
    /// A file or folder flowdir reads in the instance is a symbolic link:
    /// the instance is not opened (nothing is read through it, nothing committed from it).
    case symbolicLink(String)

    public var description: String {
        switch self {
        case .notAnInstance(let p):
            "\(p) is not a flowdir instance (no instance.yaml and .git there); create one with `flowdir new <template> \(Shell.quote(p))`"
        case .newerSchema(let p, let found):
            "\(p) was written by a newer flowdir (schemaVersion \(found); this one reads up to \(InstanceRecord.currentSchemaVersion)); upgrade flowdir to open it"
        case .malformed(let d):
            DiagnosticRenderer().render(d)
        case .invalidWorkflow(let p, let diagnostics, let sources):
            "\(p)'s workflow is invalid:\n" + DiagnosticRenderer(sources: sources).render(diagnostics.errors.sortedByLocation())
        case .exists(let p):
            "\(p) already exists; choose another folder, or remove it first"
        case .notFound(let name, let candidates):
            "no instance '\(name)'" + (candidates.isEmpty ? "" : "; did you mean '\(candidates.joined(separator: "', '"))'?")
                + " (`flowdir ls` lists them)"
        case .ambiguous(let name, let matches):
            "'\(name)' matches several instances: \(matches.joined(separator: ", ")); give a path or an id"
        case .badOverride(let text, let reason):
            "--set \(text): \(reason)"
        case .symbolicLink(let p):
            "\(FileSystemError.symbolicLink(p)); if it came in a commit from someone else (a clone, a sync), "
                + "look at who made it before you run this instance: `\(Shell.command(["git", "log", "--", p]))`"
        case .headMissing(let p, let branch, let branches):
            "\(p): HEAD names branch '\(branch)', which has no commit; flowdir would start a new history there"
                + "; switch to the instance's branch: `\(Shell.command(["git", "-C", p, "switch", branches.contains("main") ? "main" : branches.first ?? "main"]))`"
                + (branches.count > 1 ? " (branches: \(branches.joined(separator: ", ")))" : "")
        }
    }
}

/// A commit that could not be made: what stood in the way, and what
/// happens to what it was to record (kept, and committed once it can be).
public struct CommitFailure: Error, CustomStringConvertible {
    public let instance: String
    public let cause: String
    /// What could not be done: "commit", "write git's index".
    public let what: String

    public init(instance: String, cause: any Error, what: String = "commit") {
        self.instance = instance
        self.what = what
        if let failure = cause as? CommitFailure {
            self.cause = failure.cause
        } else if let git = cause as? GitError {
            self.cause = git.message
        } else {
            self.cause = "\(cause)"
        }
    }

    public var hint: String {
        let text = cause.lowercased()
        let fix = text.contains("no space left") || text.contains("disk quota")
            ? "free space on that file system"
            : text.contains("read-only") || text.contains("permission denied")
            ? "make the instance's folder and its .git writable again"
            : text.contains(".lock")
            ? "let the git command there finish (if none is running, remove the lock file it names)"
            : "fix what the message names"
        return fix + "; the changes are kept and committed as soon as it works (the watcher tries again by itself; "
            + "otherwise run flowdir again: it first puts the files back as the last commit has them)"
    }

    public var description: String { "could not \(what) in \(instance): \(cause)\nhint: \(hint)" }
}
