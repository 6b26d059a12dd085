/// `~/.config/flowdir/config.yaml` (or `$FLOWDIR_CONFIG`), DESIGN.md §10.
public struct FlowdirConfig: Sendable, Equatable {
    /// Folders whose instances `ls`, `status` and the watcher cover.
    public var roots: [String]
    /// Extra folders of `<Kind>.yaml` tool files, searched after the user's.
    public var toolPaths: [String]

    public init(roots: [String] = [], toolPaths: [String] = []) {
        self.roots = roots
        self.toolPaths = toolPaths
    }
}
