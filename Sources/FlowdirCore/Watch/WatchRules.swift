/// Which changes in an instance folder can give flowdir something to do
/// (DESIGN.md §8). Everything else (editors' and sync tools' work files,
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
    }

    /// The folders to watch in an instance with these nodes.
    public static func folders(nodes: [String]) -> [(String, Folder)] {
        var list: [(String, Folder)] = [("", .instance), (InstancePaths.nodes, .nodes), (InstancePaths.inbox, .inbox),
                                        (InstancePaths.local, .local), (InstancePaths.local + "/requests", .requests)]
        list += nodes.map { (InstancePaths.node($0), .node($0)) }
        return list
    }

    /// Whether `name` appearing, changing or going in `folder` matters.
    /// - Parameter removed: the name went away (deleted or moved out).
    public static func matters(_ name: String, in folder: Folder, removed: Bool) -> Bool {
        switch folder {
        case .instance:
            return !removed && (name == InstancePaths.instanceFile || name == InstancePaths.workflowFile)
        case .node:
            return name == "params.yaml"
        case .inbox:
            let kind = InboxName.classify(name)
            // A dropped file's leaving gives no work; an await file matters
            // either way (an answer written into it, or the question gone).
            return kind.isDropped ? !removed : kind != .ignored
        case .requests:
            return !removed && name.hasSuffix(".request.yaml")
        case .nodes, .local:
            return false  // new folders are watched; files here give no work
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
}
