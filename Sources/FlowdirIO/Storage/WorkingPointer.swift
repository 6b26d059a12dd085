#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

extension AbsentContent {
    /// The Git LFS pointer the working file at `path` is, when it is one
    /// (its content is not on this machine); nil for anything else, read no
    /// further than a pointer's largest size.
    public static func pointer(atFile path: String) -> LFSPointer? {
        var st = stat()
        guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_size <= LFSPointer.maximumLength,
              let bytes = try? LocalFileSystem().readFileIfRegular(path, limit: LFSPointer.maximumLength),
              LFSPointer.looksLikePointer(bytes), case .success(let p) = LFSPointer.parse(bytes) else { return nil }
        return p
    }
}
