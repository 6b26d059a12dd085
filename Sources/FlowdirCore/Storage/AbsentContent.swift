/// How `flowdir show` and the pages say that a large file's content is not
/// on this machine — its working file is the Git LFS pointer (a clone, or
/// content freed; docs/storage.md) — and how to get it: the same words in
/// both places.
public enum AbsentContent {
    /// `not on this machine (12.3 MB)`.
    public static func words(size: Int64) -> String {
        "not on this machine (\(self.size(size)))"
    }

    /// `flowdir storage get <instance>/<node>` for the file at `relative`
    /// (`nodes/<node>/…`) of the instance at `instance`; the instance alone
    /// for a file outside a node's folder.
    public static func getCommand(instance: String, relative: String) -> String {
        let parts = relative.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        let target = parts.count == 3 && parts[0] == "nodes" && !parts[1].isEmpty ? instance + "/" + parts[1] : instance
        return Shell.command(["flowdir", "storage", "get", target])
    }

    /// `8 B`, `40.1 KB`, `12.3 MB`: 1,024 to the next unit, as the config reads sizes.
    public static func size(_ bytes: Int64) -> String {
        guard bytes >= 1024 else { return "\(bytes) B" }
        var value = Double(bytes) / 1024
        for unit in ["KB", "MB", "GB"] {
            let tenths = Int64((value * 10).rounded())
            // 1,023.96 KB is 1.0 MB, not 1024.0 KB.
            if tenths < 10240 || unit == "GB" { return "\(tenths / 10).\(tenths % 10) \(unit)" }
            value /= 1024
        }
        return "\(bytes) B"
    }
}
