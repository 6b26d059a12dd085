/// Which changes in an instance folder can give flowdir something to do
/// (docs/commands.md, "The watcher"). Everything else (editors' and sync tools' work files,
/// flowdir's own state files) is ignored.
public enum WatchRules {
    /// A folder of an instance the watcher watches, and what it holds.
    public enum Folder: Hashable, Sendable {
        case instance
        case nodes
        case node(String)
        case inbox
        case local
        case requests
        /// The repository itself (`.git`): only to see a person's git command at work.
        case git
    }

    /// The folders to watch in an instance with these nodes.
    public static func folders(nodes: [String]) -> [(String, Folder)] {
        var list: [(String, Folder)] = [("", .instance), (InstancePaths.nodes, .nodes), (InstancePaths.inbox, .inbox),
                                        (InstancePaths.local, .local), (InstancePaths.local + "/requests", .requests)]
        list += nodes.map { (InstancePaths.node($0), .node($0)) }
        list.append((".git", .git))
        return list
    }

    /// Whether `name` appearing, changing or going in `folder` matters.
    /// - Parameter removed: the name went away (deleted or moved out).
    public static func matters(_ name: String, in folder: Folder, removed: Bool) -> Bool {
        switch folder {
        case .instance:
            return !removed && (name == InstancePaths.instanceFile || name == InstancePaths.workflowFile)
        case .node:
            // flowdir's own files going (`rm -rf nodes/x`, an output deleted): put back.
            return name == "params.yaml" || removed && [InstancePaths.stateFile, InstancePaths.outputsFolder, "runs"].contains(name)
        case .inbox:
            let kind = InboxName.classify(name)
            // A dropped file's leaving gives no work; an await file matters
            // either way (an answer written into it, or the question gone).
            return kind.isDropped ? !removed : kind != .ignored
        case .requests:
            return !removed && name.hasSuffix(".request.yaml")
        case .nodes:
            return removed  // a node's folder gone: its files are put back; new folders are watched
        case .local:
            return false
        case .git:
            return false  // see `isGitCommandAtWork`
        }
    }

    /// New folders worth a watch: a node's, the inbox, `.flowdir`, requests.
    public static func subfolder(_ name: String, of folder: Folder) -> Folder? {
        switch folder {
        case .instance:
            switch name {
            case InstancePaths.nodes: return .nodes
            case InstancePaths.inbox: return .inbox
            case InstancePaths.local: return .local
            default: return nil
            }
        case .nodes: return name.hasPrefix(".") ? nil : .node(name)
        case .local: return name == "requests" ? .requests : nil
        default: return nil
        }
    }

    /// Whether a name written or removed in `.git` shows a person's git
    /// command at work (pull, merge, rebase, commit, reset…): files git's
    /// porcelain writes and flowdir never does, or their lock files. git
    /// holds no lock from reading HEAD to moving it, so the watcher waits
    /// until these have been still a moment before it commits.
    public static func isGitCommandAtWork(_ name: String) -> Bool {
        let base = name.hasSuffix(".lock") ? String(name.dropLast(5)) : name
        return gitCommandFiles.contains(base) || gitOperations.contains { $0.file == base }
    }

    static let gitCommandFiles: Set<String> = ["FETCH_HEAD", "ORIG_HEAD", "AUTO_MERGE", "MERGE_MSG", "MERGE_MODE",
                                               "MERGE_AUTOSTASH", "COMMIT_EDITMSG", "SQUASH_MSG", "sequencer"]

    /// The files of `gitCommandFiles` that git rewrites on each command (a
    /// pull, a merge, a commit), whose change time says when it last ran.
    public static let gitCommandStamps = ["FETCH_HEAD", "ORIG_HEAD", "COMMIT_EDITMSG", "AUTO_MERGE"]

    /// What stays in `.git` while an operation stopped half-way waits for
    /// a person (a conflicted merge, a rebase), and its name for a message.
    public static let gitOperations: [(file: String, name: String)] = [
        ("MERGE_HEAD", "merge"), ("rebase-merge", "rebase"), ("rebase-apply", "rebase or am"),
        ("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert"), ("BISECT_LOG", "bisect"),
    ]
}
