#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

/// A server's token kept in a file (`serve --token-file`, `jobserver
/// --token-file`; docs/security.md): made mode 0600 from its first byte
/// (never world-readable, not even for a moment), and refused when others
/// can read or change it, when it is not a plain file, or when it is weak.
public enum TokenFile {
    public struct Refused: Error, CustomStringConvertible, Sendable {
        public var description: String
        public var hint: String
    }

    /// Shorter tokens are refused: 16 characters, as `RandomID.token()`'s 48.
    public static let minimumLength = 16

    /// The token in `path`; made (a new random one) if the file is missing.
    public static func readOrCreate(_ path: String) throws(Refused) -> String {
        var st = stat()
        if lstat(path, &st) != 0 && errno == ENOENT {
            let token = RandomID.token()
            do {
                // The temp file is opened with mode 0600, so the token is never readable by others.
                try Files.writeAtomically(path, Array((token + "\n").utf8), mode: 0o600)
            } catch {
                throw Refused(description: "cannot make the token file \(path): \(error)",
                              hint: "give a --token-file in a folder you can write")
            }
            return token
        }
        return try read(path)
    }

    /// The token in an existing file, checked.
    public static func read(_ path: String) throws(Refused) -> String {
        var st = stat()
        guard lstat(path, &st) == 0 else {
            throw Refused(description: "cannot read the token file \(path): \(Errno.current)", hint: "check the path")
        }
        guard st.st_mode & S_IFMT == S_IFREG else {
            throw Refused(description: "the token file \(path) is not a plain file (a symlink, a folder or a device)",
                          hint: "give the path of the file itself")
        }
        if st.st_mode & 0o077 != 0 {
            let mode = String(st.st_mode & 0o777, radix: 8)
            throw Refused(description: "the token file \(path) can be read or changed by others (mode 0\(mode))",
                          hint: "chmod 600 \(path)")
        }
        let bytes: [UInt8]
        do { bytes = try LocalFileSystem().readFile(path, limit: 4096) } catch {
            throw Refused(description: "cannot read the token file \(path): \(error)", hint: "check that it is a file you can read")
        }
        let token = String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }
        guard token.count >= minimumLength else {
            throw Refused(description: "the token in \(path) is shorter than \(minimumLength) characters",
                          hint: "put a longer one there, or remove the file to have one made")
        }
        guard Set(token).count >= 4 else {
            throw Refused(description: "the token in \(path) is too easy to guess (it repeats a few characters)",
                          hint: "remove the file to have a random one made")
        }
        return token
    }
}
