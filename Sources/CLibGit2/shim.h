#ifndef FLOWDIR_CLIBGIT2_SHIM_H
#define FLOWDIR_CLIBGIT2_SHIM_H
#include <git2.h>
#include <git2/sys/commit.h>
#include <git2/sys/odb_backend.h>
#include <git2/sys/repository.h>
/* zlib (a dependency of libgit2-dev): flowdir writes loose objects itself. */
#include <zlib.h>
/* OpenSSL's libcrypto (libgit2-dev needs libssh2-1-dev, which needs
   libssl-dev): SHA-1 for the checksums of the packs flowdir writes. */
#include <openssl/evp.h>
/* HMAC-SHA256 of webhook signatures (FlowdirIO's Digest.swift): the library
   already linked, instead of a second BoringSSL from swift-crypto. */
#include <openssl/hmac.h>

/* git_libgit2_opts is variadic, which Swift cannot call: one fixed wrapper per option used. */
static inline int flowdir_git_set_strict_object_creation(int enabled) {
    return git_libgit2_opts(GIT_OPT_ENABLE_STRICT_OBJECT_CREATION, enabled);
}

static inline int flowdir_git_set_fsync_gitdir(int enabled) {
    return git_libgit2_opts(GIT_OPT_ENABLE_FSYNC_GITDIR, enabled);
}

static inline int flowdir_git_set_cache_object_limit(git_object_t type, size_t size) {
    return git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, type, size);
}

#endif
