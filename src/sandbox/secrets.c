/* sandbox/secrets: hiding secret files and environment variables.
 *
 * What is hidden (README "What the command cannot see"):
 *   - the credential stores of home_stores[] below, and the policy's "~/"
 *     paths, in every home of the caller: $HOME, the password database's
 *     home of the real uid, and any home that contains the workspace (root
 *     working in /home/alice/proj hides alice's stores too);
 *   - every other home, whole: the password database's homes outside the
 *     system trees, every entry of /home, and /root;
 *   - system_secrets[] (shadow files, host keys, TLS keys, ...) and the
 *     policy's absolute paths.
 * SUDO_USER is not consulted: anyone can set it, and a sudo caller's own
 * home either contains the workspace (its stores are hidden) or is another
 * user's home (hidden whole).
 *
 * Patterns may hold glob characters (* ? [...]) in any component; a
 * component matches hidden names only when it starts with a dot, and always
 * matches itself literally (a path handed in as is). Symlinks are followed:
 * a store that is a symlink (~/.ssh -> /data/keys) hides what it points to,
 * because that is where the secret is readable from. Nothing that is the
 * workspace, a caller's home, or an ancestor of one (that includes "/") is
 * ever covered: a store resolving there holds nothing the command could not
 * read anyway, and hiding it would hide the workspace. A mask covers its
 * target at every place the mount table shows it (bind mounts of it, of a
 * directory above it or of a part of it).
 *
 * Masking runs inside the sandbox's private mount namespace, before the host
 * is remounted read-only. One detached read-only tmpfs (new mount API)
 * holds an empty 0400 file and an empty 0500 directory; each mask is a
 * clone of one of them moved onto the target's O_PATH fd: two syscalls, no
 * path walked twice, nothing created on the host. Kernels without the API
 * get a tmpfs per directory and /dev/null (read-only) per file instead. */
#include "sandbox/harden.h"

#include "sandbox/landlock.h"
#include "util/cleanup.h"
#include "util/syscalls.h"
#include "util/trace.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* New mount API, by raw syscall (glibc < 2.36 has no wrappers). */
#ifndef FSOPEN_CLOEXEC
#define FSOPEN_CLOEXEC 0x00000001
#endif
#ifndef FSCONFIG_SET_STRING
#define FSCONFIG_SET_STRING 1
#endif
#ifndef FSCONFIG_CMD_CREATE
#define FSCONFIG_CMD_CREATE 6
#endif
#ifndef FSMOUNT_CLOEXEC
#define FSMOUNT_CLOEXEC 0x00000001
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOVE_MOUNT_T_EMPTY_PATH
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif

#if defined(SYS_fsopen) && defined(SYS_fsconfig) && defined(SYS_fsmount) && \
	defined(SYS_open_tree) && defined(SYS_move_mount) && defined(SYS_mount_setattr)
#define HAVE_NEW_MOUNT_API 1
#else
#define HAVE_NEW_MOUNT_API 0
#endif

#define MASK_FILE "empty"
#define MASK_DIR "dir"

/* Credential stores, relative to each of the caller's homes. A directory
 * is hidden whole where nothing in it is needed to build or test code. */
static const char *const home_stores[] = {
	/* keys, keyrings, password managers, X cookies */
	".ssh", ".gnupg", ".pki", ".password-store", ".local/share/gopass", ".config/gopass",
	".local/share/keyrings", ".local/share/kwalletd", ".config/Bitwarden CLI", ".config/op", ".op",
	".Xauthority", ".ICEauthority",
	/* cloud CLIs */
	".aws", ".azure", ".config/gcloud", ".oci", ".config/doctl", ".config/hcloud", ".bluemix",
	".aliyun", ".config/linode-cli", ".config/scw", ".config/openstack", ".config/exoscale", ".fly",
	".config/netlify", ".local/share/com.vercel.cli", ".config/stripe", ".cloudflared", ".wrangler",
	".config/.wrangler", ".pulumi", ".databrickscfg", ".snowsql", ".kaggle", ".dbt",
	".config/configstore",
	/* containers and clusters */
	/* .docker whole: its config.json is rewritten by rename, which would
	 * drop a mask on the file itself */
	".kube", ".docker", ".config/containers/auth.json", ".config/helm", ".minikube",
	".talos",
	/* git forges */
	".git-credentials", ".config/git/credentials", ".gitcookies", ".cache/git/credential",
	".git-credential-cache", ".config/gh", ".config/glab-cli", ".config/hub", ".config/tea",
	".config/github-copilot", ".jfrog",
	/* package managers */
	".netrc", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pypirc", ".config/pip", ".pip",
	".config/pypoetry/auth.toml", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
	".local/share/gem/credentials", ".m2/settings.xml", ".m2/settings-security.xml",
	".gradle/gradle.properties", ".nuget/NuGet/NuGet.Config", ".config/NuGet/NuGet.Config",
	".composer/auth.json", ".config/composer/auth.json", ".bundle/config", ".hex",
	/* vault, terraform, object storage */
	".vault-token", ".terraformrc", ".terraform.d/credentials.tfrc.json", ".config/rclone", ".s3cfg",
	".boto", ".passwd-s3fs", ".config/sops",
	/* database clients */
	".pgpass", ".my.cnf", ".mylogin.cnf", ".mongodb", ".dbshell",
	/* shell and REPL histories (.bash_history, .python_history, .psql_history, ...) */
	".*_history", ".zhistory", ".histfile", ".local/share/fish/fish_history",
	".ipython/profile_*/history.sqlite", ".julia/logs",
	/* browsers and mail (logins, cookies) */
	".mozilla", ".thunderbird", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware",
	".config/microsoft-edge", ".config/vivaldi", ".config/opera",
	/* AI coding agents and model hubs */
	".claude", ".claude.json", ".codex", ".gemini", ".continue", ".huggingface",
	".cache/huggingface/token", ".ollama/id_*", ".config/io.datasette.llm", ".local/share/opencode/auth.json",
	".cursor/mcp.json", ".aider.conf.yml", ".codeium",
	/* editors: VS Code-like state (tokens in state.vscdb), vim/less histories */
	".config/Code*/User/globalStorage", ".config/Cursor/User/globalStorage", ".config/VSCodium/User/globalStorage",
	".config/Windsurf/User/globalStorage", ".viminfo", ".lesshst", ".local/share/nvim/shada",
	".local/state/nvim/shada", ".local/share/atuin", ".local/share/zsh",
	/* mail, chat, remote desktops: passwords and session tokens */
	".authinfo", ".authinfo.gpg", ".msmtprc", ".config/msmtp", ".muttrc", ".mutt", ".config/mutt",
	".fetchmailrc", ".smbcredentials", ".irssi", ".weechat", ".config/weechat", ".local/share/weechat",
	".config/discord", ".config/Slack", ".config/Signal", ".config/Element", ".local/share/TelegramDesktop",
	".config/filezilla", ".config/remmina", ".local/share/remmina", ".vnc/passwd",
	/* developer services, tunnels, devices, wallets */
	".config/ngrok", ".ngrok2", ".circleci/cli.yml", ".wakatime.cfg", ".sentryclirc", ".config/tailscale",
	".android/adbkey", ".bitcoin", ".electrum", ".ethereum/keystore", ".config/keybase",
	/* environment files directly in the home */
	".env", ".env.*",
};

/* Classes of credential files, by name: matched (hidden names included)
 * against every directory inside a caller's home that is split anyway for
 * the stores above (the home, .config, .local/share, .cache, ...), so they
 * cost no syscall: one listing serves all of them. */
static const char *const home_classes[] = {
	"*.gpg", "*.kdbx", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "id_rsa*", "id_dsa*",
	"id_ecdsa*", "id_ed25519*", "keystore",
	"*history*", "*_hist", "*.hist", "*wallet*", "Cookies", "Cookies-journal", "Local Storage",
	"Session Storage", "*token*", "*Token*", "*TOKEN*", "*credential*", "*Credential*", "*secret*",
	"*Secret*", "*SECRET*", "auth.json", "*.vscdb",
};

/* Shell start-up files: hidden when they assign a value the environment
 * filter would drop (export GITHUB_TOKEN=...), readable otherwise (login
 * and interactive shells, and tools, read them for PATH and aliases). */
static const char *const shell_rc[] = {
	".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zshenv", ".zprofile",
	".zlogin", ".bash_aliases", ".kshrc", ".mkshrc", ".cshrc", ".tcshrc",
};

/* Secrets of the system, hidden even from root. Rootless they cost nothing
 * unless the caller can read one (a directory is split only then). */
static const char *const system_secrets[] = {
	"/etc/*shadow*" /* shadow, gshadow, their - and .bak copies */, "/etc/security/opasswd",
	"/etc/ssh/ssh_host_*_key", "/etc/ssl/private", "/etc/pki/tls/private", "/etc/pki/CA/private",
	"/etc/krb5.keytab", "/etc/krb5kdc", "/var/lib/krb5kdc", "/etc/sssd", "/var/lib/sss/db",
	"/var/lib/sss/secrets", "/var/lib/samba/private", "/etc/ppp/*-secrets" /* chap, pap, srp */,
	"/etc/ipsec.secrets", "/etc/ipsec.d/private", "/etc/swanctl/private",
	"/etc/NetworkManager/system-connections", "/etc/wpa_supplicant", "/etc/netplan/*" /* wifi, VPN keys */,
	"/etc/wireguard", "/etc/openvpn" /* keys, often inline in the .conf */, "/etc/mysql/debian.cnf",
	"/etc/letsencrypt/archive", "/etc/letsencrypt/keys", "/etc/letsencrypt/live", "/etc/cups/ssl",
	"/etc/ceph/*.keyring", "/etc/kubernetes", "/etc/rancher", "/etc/postfix/sasl_passwd",
	"/etc/exim4/passwd.client", "/etc/ldap.secret", "/etc/libnss-ldap.secret", "/etc/pam_ldap.secret",
	"/etc/fetchmailrc", "/etc/davfs2/secrets", "/etc/rsyncd.secrets", "/etc/chrony/chrony.keys",
	"/etc/ntp.keys", "/etc/credstore", "/etc/credstore.encrypted" /* systemd credentials */,
	"/var/lib/systemd/credential.secret", "/var/backups",
	/* APT repository logins; debconf's answers to password prompts. A
	 * directory that is world-searchable on most hosts (auth.conf.d,
	 * netplan) is named by its entries: rootless, their usual 0600 then
	 * costs no split of /etc. */
	"/etc/apt/auth.conf", "/etc/apt/auth.conf.d/*", "/var/cache/debconf/passwords.dat",
	/* failed logins: often a password typed as the user name */
	"/var/log/btmp*",
	/* Not a secret: the account databases' lock (useradd, passwd), which
	 * a command that opens it (read-only is enough for flock) could hold
	 * until it ends. /etc is split anyway: one rule less. The dpkg and
	 * apt locks stay a known limit: hiding them split /var/lib and three
	 * directories below it, about 50 rules on every run as root. */
	"/etc/.pwd.lock",
};

/* Variables of the caller's environment that name where a tool keeps its
 * credentials (files or directories; KUBECONFIG is a list). */
static const char *const env_store_vars[] = {
	"KUBECONFIG", "DOCKER_CONFIG", "REGISTRY_AUTH_FILE", "AWS_SHARED_CREDENTIALS_FILE",
	"AWS_CONFIG_FILE", "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG", "AZURE_CONFIG_DIR",
	"OCI_CLI_CONFIG_FILE", "GNUPGHOME", "PASSWORD_STORE_DIR", "GH_CONFIG_DIR", "GLAB_CONFIG_DIR",
	"NPM_CONFIG_USERCONFIG", "PIP_CONFIG_FILE", "TF_CLI_CONFIG_FILE", "RCLONE_CONFIG", "BOTO_CONFIG",
	"PGPASSFILE", "MYSQL_TEST_LOGIN_FILE", "HISTFILE", "HF_TOKEN_PATH", "CLAUDE_CONFIG_DIR",
	"CODEX_HOME", "NETRC", "VAULT_CONFIG_PATH", "HELM_CONFIG_HOME", "SOPS_AGE_KEY_FILE",
};

/* Variables naming a directory that stands for one under the home: the
 * stores under that directory are hidden there too. */
static const struct {
	const char *var, *home_rel;
} env_store_dirs[] = {
	{"XDG_CONFIG_HOME", ".config/"}, {"XDG_DATA_HOME", ".local/share/"},
	{"XDG_CACHE_HOME", ".cache/"},   {"CARGO_HOME", ".cargo/"},
	{"GRADLE_USER_HOME", ".gradle/"}, {"HF_HOME", ".cache/huggingface/"},
};

/* ---- the masks ---------------------------------------------------------- */

typedef struct devino {
	dev_t dev;
	ino_t ino;
} devino;

typedef struct devino_set {
	devino *v;
	size_t n, cap;
} devino_set;

typedef struct strv_buf {
	char **v;
	size_t n;
} strv_buf;

static void strv_buf_free(strv_buf *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->v[i]);
	free(b->v);
}

static int strv_buf_push(strv_buf *b, char *s)
{
	char **v = realloc(b->v, (b->n + 1) * sizeof(*v));
	if (!v) {
		free(s);
		return -ENOMEM;
	}
	b->v = v;
	b->v[b->n++] = s;
	return 0;
}

static int push_copy(strv_buf *b, const char *s)
{
	char *c = strdup(s);
	return c ? strv_buf_push(b, c) : -ENOMEM;
}

/* One line of /proc/self/mountinfo: which filesystem, which of its
 * directories (root), shown where (point). */
typedef struct mount_entry {
	dev_t dev;
	char *root, *point;
} mount_entry;

typedef struct home_dir {
	char *path;
	devino id;
} home_dir;

typedef struct masker {
	int src;           /* detached read-only tmpfs holding MASK_FILE and MASK_DIR, or -1 */
	dev_t src_dev;     /* what a mask shows: a path already masked is left alone */
	bool src_tried;    /* src was asked for (masker_init, or the first cover) */
	devino_set keep;   /* never covered: the workspace, the caller's homes, their ancestors */
	const char *const *paths; /* the policy's: "!X" keeps the built-in X (a store, a
				   * system secret, a home) visible */
	mount_entry *mounts;   /* the mount table when masking began */
	size_t nmounts;
	home_dir *homes;       /* the caller's homes: their stores are hidden */
	size_t nhomes, homes_cap;
	strv_buf *collect;     /* Landlock: other homes are listed here, not covered */
	devino_set linked;     /* files covered that have other names (hard links) */
	txbox_error *err;
} masker;

static void masker_done(masker *m)
{
	if (m->src >= 0)
		close(m->src);
	free(m->keep.v);
	free(m->linked.v);
	for (size_t i = 0; i < m->nhomes; i++)
		free(m->homes[i].path);
	free(m->homes);
	for (size_t i = 0; i < m->nmounts; i++)
		free(m->mounts[i].root), free(m->mounts[i].point);
	free(m->mounts);
}

/* The policy keeps prefix+name visible ("!~/.npmrc", "!/etc/ssl/private"). */
static bool unmasked(const masker *m, const char *prefix, const char *name)
{
	size_t n = strlen(prefix);
	for (const char *const *p = m->paths; p && *p; p++)
		if ((*p)[0] == '!' && !strncmp(*p + 1, prefix, n) && !strcmp(*p + 1 + n, name))
			return true;
	return false;
}

static bool devino_has(const devino_set *s, const struct stat *st)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].dev == st->st_dev && s->v[i].ino == st->st_ino)
			return true;
	return false;
}

static int devino_add(devino_set *s, const struct stat *st)
{
	if (devino_has(s, st))
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 32;
		devino *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v, s->cap = cap;
	}
	s->v[s->n++] = (devino){st->st_dev, st->st_ino};
	return 0;
}

/* dirfd and each directory above it, up to "/" (following "..", so
 * through mount points). Takes dirfd. */
static int keep_with_ancestors(masker *m, int dirfd)
{
	_cleanup_close_ int fd = dirfd;
	struct stat st, up;
	if (fstat(fd, &st) < 0)
		return -errno;
	for (unsigned depth = 0; depth < PATH_MAX / 2; depth++) {
		int r = devino_add(&m->keep, &st);
		if (r < 0)
			return r;
		int parent = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (parent < 0)
			return -errno;
		close(fd);
		fd = parent;
		if (fstat(fd, &up) < 0)
			return -errno;
		if (up.st_dev == st.st_dev && up.st_ino == st.st_ino)
			return 0; /* ".." of "/" is "/" */
		st = up;
	}
	return -ELOOP;
}

#if HAVE_NEW_MOUNT_API
/* The detached read-only tmpfs every mask is cloned from. */
static int make_mask_source(void)
{
	_cleanup_close_ int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -errno;
	if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", "0500", 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", "4k", 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "nr_inodes", "4", 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -errno;
	_cleanup_close_ int mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, 0);
	if (mnt < 0)
		return -errno;
	int f = openat(mnt, MASK_FILE, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0400);
	if (f < 0)
		return -errno;
	close(f);
	if (mkdirat(mnt, MASK_DIR, 0500) < 0)
		return -errno;
	/* Clones keep these flags: each mask is read-only from birth. */
	struct {
		uint64_t attr_set, attr_clr, propagation, userns_fd;
	} attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
			      MOUNT_ATTR_NOEXEC};
	if (syscall(SYS_mount_setattr, mnt, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
		return -errno;
	return steal_fd(mnt);
}
#endif

/* m->src, made once; without the new mount API it stays -1 (the masks
 * are made by path). */
static int mask_source(masker *m)
{
	if (m->src_tried)
		return 0;
	m->src_tried = true;
#if HAVE_NEW_MOUNT_API
	int src = make_mask_source();
	if (src >= 0) {
		struct stat st;
		if (fstat(src, &st) < 0) {
			int e = -errno;
			close(src);
			return e;
		}
		m->src = src;
		m->src_dev = st.st_dev;
	} else if (src != -ENOSYS && src != -EPERM) {
		return src;
	}
#endif
	return 0;
}

static int masker_init(masker *m, const char *const *paths, txbox_error *err)
{
	*m = (masker){.src = -1, .paths = paths, .err = err};
	int r = mask_source(m);
	return r < 0 ? txbox_fail_errno(err, r, "secrets: making the mask tmpfs") : 0;
}

/* Old kernels: a tmpfs over a directory, /dev/null (read-only) over the
 * rest. fd is the target's O_PATH descriptor. */
static int cover_by_path(int fd, bool dir)
{
	char target[40], path[PATH_MAX];
	snprintf(target, sizeof target, "/proc/self/fd/%d", fd);
	if (dir)
		return mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			     "mode=0500,size=4k,nr_inodes=2") < 0 ? -errno : 0;
	/* The bind's flags are set by a remount of the bind itself, which
	 * target cannot name: the magic link leads to fd's own mount, under
	 * the bind (a remount there is EINVAL: not a mount's root). The path,
	 * looked up, ends on the bind, unless something else is mounted over
	 * it: then the bind stays writable (writes to /dev/null go nowhere). */
	ssize_t n = readlink(target, path, sizeof path - 1);
	if (n <= 0 || path[0] != '/')
		return n < 0 ? -errno : -ENOENT;
	path[n] = '\0';
	if (mount("/dev/null", target, NULL, MS_BIND, NULL) < 0)
		return -errno;
	struct stat st;
	if (stat(path, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3))
		return 0;
	if (mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, NULL) < 0)
		return -errno;
	return 0;
}

/* Cover fd's target with an empty, read-only file or directory. The mask
 * source is made on the first cover when masker_init was not called (the
 * read layer's helper: most runs need no mount at all). */
static int cover(masker *m, int fd, bool dir)
{
	int r = mask_source(m);
	if (r < 0)
		return r;
#if HAVE_NEW_MOUNT_API
	if (m->src >= 0) {
		_cleanup_close_ int tree = (int)syscall(SYS_open_tree, m->src, dir ? MASK_DIR : MASK_FILE,
							OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (tree < 0)
			return -errno;
		if (syscall(SYS_move_mount, tree, "", fd, "",
			    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
			return -errno;
		return 0;
	}
#endif
	return cover_by_path(fd, dir);
}

/* A path that cannot be reached holds nothing to hide. */
static bool unreachable(int e)
{
	return e == ENOENT || e == ENOTDIR || e == ELOOP || e == EACCES;
}

/* Symlinks are followed (a store's target is where it is readable), but
 * not /proc's magic links: "~/.ssh -> /proc/self/fd/3" names one of init's
 * own descriptors, not a place. */
static int open_store(int dirfd, const char *rel, int flags)
{
	if (!probe_openat2())
		return openat(dirfd, rel, flags | O_CLOEXEC);
	struct txbox_open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC),
				     .resolve = RESOLVE_NO_MAGICLINKS};
	return sys_openat2(dirfd, rel, &how);
}

/* ---- other places a path is seen --------------------------------------- */

/* mountinfo escapes ' ', '\t', '\n' and '\\' as \ooo. In place. */
static void unescape_octal(char *s)
{
	char *w = s;
	for (char *r = s; *r; w++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w = (char)((r[1] - '0') << 6 | (r[2] - '0') << 3 | (r[3] - '0'));
			r += 4;
		} else {
			*w = *r++;
		}
	}
	*w = '\0';
}

static int mounts_read(masker *m)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		unsigned maj, min;
		int root_at, root_end, point_at, point_end;
		if (sscanf(line, "%*d %*d %u:%u %n%*s%n %n%*s%n", &maj, &min, &root_at, &root_end,
			   &point_at, &point_end) != 2 || root_end <= root_at || point_end <= point_at)
			continue;
		line[root_end] = line[point_end] = '\0';
		mount_entry *v = realloc(m->mounts, (m->nmounts + 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->mounts = v;
		mount_entry *e = &v[m->nmounts];
		*e = (mount_entry){makedev(maj, min), strdup(line + root_at), strdup(line + point_at)};
		m->nmounts++;
		if (!e->root || !e->point)
			return -ENOMEM;
		unescape_octal(e->root);
		unescape_octal(e->point);
	}
	return 0;
}

/* p is dir or below it: what follows dir in p ("" or "/x..."), else NULL. */
static const char *below(const char *p, const char *dir)
{
	size_t n = strcmp(dir, "/") ? strlen(dir) : 0;
	if (strncmp(p, dir, n) != 0 || (p[n] != '\0' && p[n] != '/'))
		return NULL;
	return p + n;
}

/* The path of canon within its filesystem: through the last-made mount
 * with the longest mount point above it. NULL when none is. */
static char *path_in_fs(const masker *m, const char *canon, size_t *which)
{
	const mount_entry *best = NULL;
	for (size_t i = 0; i < m->nmounts; i++) {
		const mount_entry *e = &m->mounts[i];
		if (below(canon, e->point) && (!best || strlen(e->point) >= strlen(best->point)))
			best = e, *which = i;
	}
	char *p = NULL;
	if (best && asprintf(&p, "%s%s", strcmp(best->root, "/") ? best->root : "",
			     below(canon, best->point)) < 0)
		p = NULL;
	return p;
}

/* Every other place the mount table shows canon (whose identity is st):
 * in alias, the mounts showing it whole (a bind mount of it, of a
 * directory above it, the same filesystem mounted again); in inner, the
 * mounts showing a part of it (a bind of a directory below it). */
static int aliases(const masker *m, const char *canon, const struct stat *st, strv_buf *alias,
		   strv_buf *inner)
{
	size_t self = SIZE_MAX;
	_cleanup_free_ char *in_fs = path_in_fs(m, canon, &self);
	if (!in_fs)
		return 0;
	for (size_t i = 0; i < m->nmounts; i++) {
		const mount_entry *e = &m->mounts[i];
		const char *rest = below(in_fs, e->root), *part = below(e->root, in_fs);
		char *p = NULL;
		if (i == self || e->dev != st->st_dev || (!rest && !(part && *part)))
			continue;
		if (!rest) {
			int r = (p = strdup(e->point)) ? strv_buf_push(inner, p) : -ENOMEM;
			if (r < 0)
				return r;
			continue;
		}
		if (asprintf(&p, "%s%s", strcmp(e->point, "/") || !*rest ? e->point : "", rest) < 0)
			return -ENOMEM;
		struct stat at;
		if (!strcmp(p, canon) || stat(p, &at) < 0 || at.st_dev != st->st_dev ||
		    at.st_ino != st->st_ino) {
			free(p); /* covered by another mount, or a different tree */
			continue;
		}
		int r = strv_buf_push(alias, p);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Cover at (by path) when it still shows what a mask hides, identified by
 * want (same inode) or, for a part of it, by the device alone. */
static int cover_alias(masker *m, const char *at, const struct stat *want, bool part)
{
	_cleanup_close_ int fd = open(at, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_dev != want->st_dev ||
	    (!part && st.st_ino != want->st_ino) || devino_has(&m->keep, &st))
		return 0; /* masked already through another alias, or gone */
	return cover(m, fd, S_ISDIR(st.st_mode));
}

/* Cover fd (identity st) and every other place the mount table shows it:
 * a mask is a mount on one path, the same inodes seen through a bind of
 * the store, of a part of it, of its home, of /home, of /etc or of / stay
 * readable there. */
static int cover_everywhere(masker *m, int fd, const struct stat *st)
{
	char self[64], canon[PATH_MAX];
	snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(self, canon, sizeof canon - 1);
	_cleanup_(strv_buf_free) strv_buf alias = {0};
	_cleanup_(strv_buf_free) strv_buf inner = {0};
	if (n > 0 && canon[0] == '/') {
		canon[n] = '\0';
		int r = aliases(m, canon, st, &alias, &inner);
		if (r < 0)
			return r;
	}
	int r = cover(m, fd, S_ISDIR(st->st_mode));
	for (size_t i = 0; r == 0 && i < alias.n; i++)
		r = cover_alias(m, alias.v[i], st, false);
	for (size_t i = 0; r == 0 && i < inner.n; i++)
		r = cover_alias(m, inner.v[i], st, true);
	return r;
}

/* Hide base/rel (rel relative to dirfd; base names it in errors). */
static int mask_at(masker *m, int dirfd, const char *base, const char *rel)
{
	_cleanup_close_ int fd = open_store(dirfd, *rel ? rel : ".", O_PATH);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return unreachable(errno) ? 0 : txbox_fail_errno(m->err, -errno, "secrets: opening %s/%s", base, rel);
	if ((m->src >= 0 && st.st_dev == m->src_dev) || devino_has(&m->keep, &st) ||
	    S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) /* HISTFILE=/dev/null */
		return 0;
	int r = cover_everywhere(m, fd, &st);
	if (r == 0 && S_ISREG(st.st_mode) && st.st_nlink > 1)
		r = devino_add(&m->linked, &st);
	if (r < 0)
		return txbox_fail_errno(m->err, r, "secrets: masking %s/%s", base, rel);
	return 0;
}

/* Hide what rel matches under at. The first lit bytes of rel are a name
 * already matched (taken literally, whatever characters it holds). */
static int mask_glob(masker *m, int at, const char *base, const char *rel, size_t lit)
{
	const char *meta = strpbrk(rel + lit, "*?[");
	if (!meta)
		return mask_at(m, at, base, rel);
	const char *cs = meta, *ce = strchrnul(meta, '/');
	while (cs > rel && cs[-1] != '/')
		cs--;
	char dir[PATH_MAX], comp[NAME_MAX + 1], sub[PATH_MAX], sbase[PATH_MAX];
	if ((size_t)(ce - cs) > NAME_MAX || (size_t)(cs - rel) >= sizeof dir)
		return txbox_fail(m->err, -ENAMETOOLONG, "secrets: pattern too long: %s", rel);
	snprintf(dir, sizeof dir, "%.*s", cs > rel ? (int)(cs - rel - 1) : 1, cs > rel ? rel : ".");
	snprintf(comp, sizeof comp, "%.*s", (int)(ce - cs), cs);

	int dfd = open_store(at, dir, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return unreachable(errno) ? 0 : txbox_fail_errno(m->err, -errno, "secrets: opening %s/%s", base, dir);
	_cleanup_closedir_ DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return txbox_fail_errno(m->err, -errno, "secrets: listing %s/%s", base, dir);
	}
	if (snprintf(sbase, sizeof sbase, "%s/%s", base, dir) >= (int)sizeof sbase)
		sbase[0] = '\0'; /* only names things in errors */
	/* The component as a name of its own: a path given literally. */
	snprintf(sub, sizeof sub, "%s%s", comp, ce);
	int r = mask_glob(m, dirfd(d), sbase, sub, strlen(comp));
	for (struct dirent *de; r == 0 && (de = readdir(d));) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, comp) ||
		    fnmatch(comp, de->d_name, FNM_PERIOD) != 0)
			continue;
		if (snprintf(sub, sizeof sub, "%s%s", de->d_name, ce) >= (int)sizeof sub)
			continue;
		r = mask_glob(m, dirfd(d), sbase, sub, strlen(de->d_name));
	}
	return r;
}

/* ---- whose homes -------------------------------------------------------- */

/* Directories of the system that accounts use as their home (daemon:
 * /usr/sbin, sys: /dev, systemd-network: /, nobody: /nonexistent, mail:
 * /var/mail is not one: it is mail's own). p is canonical (realpath):
 * "/home//carol/" was resolved to "/home/carol" before asking. A home
 * anywhere else — /opt/erin, /srv/app, /var/lib/postgresql, /usr/local/bob
 * — is a directory of its own, hidden like one under /home, even when
 * several accounts share it (their data is no more the command's). */
static bool system_tree(const char *p)
{
	static const char *const under[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
					    "/etc", "/dev", "/proc", "/sys", "/boot", "/run",
					    "/var/run", "/tmp", "/var/tmp"};
	static const char *const exact[] = {"/", "/usr", "/usr/local", "/var", "/var/lib",
					    "/var/cache", "/var/spool", "/var/log", "/var/local",
					    "/var/opt", "/var/backups", "/home", "/srv", "/opt",
					    "/mnt", "/media", "/snap", "/nonexistent"};
	/* /usr is the system's, but for the homes under /usr/local/<name>
	 * that are not the standard tree there (bin, lib, share, ...) */
	static const char *const usr_local[] = {"bin", "sbin", "lib", "lib64", "libexec", "include",
						"share", "src", "etc", "games", "man"};
	for (size_t i = 0; i < ARRAY_SIZE(under); i++) {
		size_t n = strlen(under[i]);
		if (!strncmp(p, under[i], n) && (p[n] == '\0' || p[n] == '/'))
			return true;
	}
	for (size_t i = 0; i < ARRAY_SIZE(exact); i++)
		if (!strcmp(p, exact[i]))
			return true;
	if (strncmp(p, "/usr/", 5) != 0)
		return false;
	if (strncmp(p, "/usr/local/", 11) != 0)
		return true;
	size_t n = strcspn(p + 11, "/");
	for (size_t i = 0; i < ARRAY_SIZE(usr_local); i++)
		if (strlen(usr_local[i]) == n && !strncmp(p + 11, usr_local[i], n))
			return true;
	return false;
}

/* Another path of a home (no check that it is new: an alias is the same
 * directory at another place). */
static int home_push(masker *m, const char *path, const struct stat *st)
{
	if (m->nhomes == m->homes_cap) {
		size_t cap = m->homes_cap ? 2 * m->homes_cap : 4;
		home_dir *v = realloc(m->homes, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->homes = v, m->homes_cap = cap;
	}
	char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	m->homes[m->nhomes++] = (home_dir){copy, {st->st_dev, st->st_ino}};
	return 0;
}

static int home_add(masker *m, const char *path, const struct stat *st)
{
	for (size_t i = 0; i < m->nhomes; i++)
		if (m->homes[i].id.dev == st->st_dev && m->homes[i].id.ino == st->st_ino)
			return 0;
	return home_push(m, path, st);
}

/* One of the caller's homes: its stores are hidden; it and its ancestors
 * are never covered. A home that does not exist is skipped. */
static int own_home(masker *m, const char *path)
{
	if (!path || path[0] != '/')
		return 0;
	int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return unreachable(errno) ? 0 : txbox_fail_errno(m->err, -errno, "secrets: opening the home %s", path);
	/* A $HOME the caller cannot search (`runuser -u bob` keeps HOME=/root)
	 * holds nothing the command could read: not a home of the caller's.
	 * Whose it is decides whether it is hidden whole (/root is, for bob). */
	if (faccessat(fd, "", X_OK, AT_EMPTY_PATH | AT_EACCESS) < 0 && errno == EACCES) {
		close(fd);
		return 0;
	}
	int r = fstat(fd, &st) < 0 ? -errno : home_add(m, path, &st);
	if (r < 0) {
		close(fd);
		return txbox_fail_errno(m->err, r, "secrets: the home %s", path);
	}
	r = keep_with_ancestors(m, fd);
	return r < 0 ? txbox_fail_errno(m->err, r, "secrets: the directories above %s", path) : 0;
}

/* Somebody else's home: covered whole, unless it contains the workspace
 * (then only its stores are hidden) or is a system tree. */
static int other_home(masker *m, const char *path)
{
	_cleanup_free_ char *canon = realpath(path, NULL);
	if (!canon)
		return unreachable(errno) ? 0 : txbox_fail_errno(m->err, -errno, "secrets: resolving the home %s", path);
	if (system_tree(canon) || unmasked(m, "", path) || unmasked(m, "", canon))
		return 0;
	_cleanup_close_ int fd = open(canon, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return unreachable(errno) ? 0 : txbox_fail_errno(m->err, -errno, "secrets: opening the home %s", path);
	if (m->src >= 0 && st.st_dev == m->src_dev)
		return 0;
	if (devino_has(&m->keep, &st))
		return home_add(m, path, &st) < 0 ? txbox_fail(m->err, -ENOMEM, "secrets: out of memory") : 0;
	if (m->collect) {
		char *c = steal_ptr(canon);
		return strv_buf_push(m->collect, c) < 0 ? txbox_fail(m->err, -ENOMEM, "secrets: out of memory") : 0;
	}
	int r = cover_everywhere(m, fd, &st);
	return r < 0 ? txbox_fail_errno(m->err, r, "secrets: hiding the home %s", path) : 0;
}

#define PASSWD_MAX_SIZE (64 << 20) /* a million accounts of 64 bytes */

/* One line of /etc/passwd: name:password:uid:gid:gecos:home:shell. The
 * home is the sixth field, to the next ':' or the line's end (a line the
 * C library would skip for a missing shell still names a place that may
 * be somebody's: hiding it is the safe side). NULL: no home there. */
static char *passwd_line_home(char *line, uid_t *uid, bool *has_uid)
{
	char *f[6];
	line += strspn(line, " \t");
	if (*line == '#' || *line == '\0')
		return NULL;
	for (size_t k = 0; k < ARRAY_SIZE(f); k++) {
		f[k] = line;
		line = strchrnul(line, ':');
		if (k + 1 == ARRAY_SIZE(f))
			*line = '\0';
		else if (*line)
			*line++ = '\0';
		else
			return NULL;
	}
	char *end;
	errno = 0;
	unsigned long u = strtoul(f[2], &end, 10);
	*has_uid = *f[2] && !*end && !errno && u <= UINT32_MAX;
	*uid = (uid_t)u;
	return f[5][0] == '/' ? f[5] : NULL;
}

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted, each once: thousands of service accounts share /nonexistent. */
static void strv_buf_uniq(strv_buf *b)
{
	size_t w = 0;
	if (b->n)
		qsort(b->v, b->n, sizeof(*b->v), by_str);
	for (size_t i = 0; i < b->n; i++) {
		if (w && !strcmp(b->v[w - 1], b->v[i]))
			free(b->v[i]);
		else
			b->v[w++] = b->v[i];
	}
	b->n = w;
}

/* The homes of the password database (files: reading it must not depend
 * on a network or a daemon) and the real uid's, which comes first. Every
 * line is read: an account skipped is a home left readable, so a file
 * that cannot be read whole fails the run. */
static int read_passwd_homes(uid_t uid, char **own, strv_buf *others, txbox_error *err)
{
	_cleanup_fclose_ FILE *f = fopen("/etc/passwd", "re");
	if (!f)
		return errno == ENOENT ? 0 : txbox_fail_errno(err, -errno, "secrets: opening /etc/passwd");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0, total = 0;
	errno = 0;
	for (ssize_t n; (n = getline(&line, &cap, f)) > 0; errno = 0) {
		if ((total += (size_t)n) > PASSWD_MAX_SIZE)
			return txbox_fail(err, -EFBIG, "secrets: /etc/passwd is larger than %d MiB: whose homes it lists is not known",
					  PASSWD_MAX_SIZE >> 20);
		line[strcspn(line, "\n")] = '\0';
		uid_t u;
		bool has_uid;
		const char *home = passwd_line_home(line, &u, &has_uid);
		int r = 0;
		if (home && has_uid && u == uid && !*own)
			r = (*own = strdup(home)) ? 0 : -ENOMEM;
		else if (home)
			r = push_copy(others, home);
		if (r < 0)
			return txbox_fail(err, r, "secrets: out of memory");
	}
	if (ferror(f) || !feof(f)) /* a read error (EISDIR, EIO), or getline's ENOMEM */
		return txbox_fail_errno(err, errno ? -errno : -EIO, "secrets: reading /etc/passwd");
	strv_buf_uniq(others);
	return 0;
}

/* Not in /etc/passwd (a directory service): ask NSS, with room for an
 * entry of any reasonable size. */
static char *nss_home(uid_t uid)
{
	for (size_t size = 4096; size <= (1 << 20); size *= 4) {
		_cleanup_free_ char *buf = malloc(size);
		struct passwd pw, *res = NULL;
		int r = buf ? getpwuid_r(uid, &pw, buf, size, &res) : ENOMEM;
		if (r != ERANGE)
			return r == 0 && res && pw.pw_dir ? strdup(pw.pw_dir) : NULL;
	}
	return NULL;
}

/* Every entry of dir is somebody's home (users of a directory service
 * are not in /etc/passwd). */
static int cover_dir_entries(masker *m, const char *dir)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	if (!d && errno == EACCES && m->collect) { /* unlistable (/home 0711): hidden whole but for the splits */
		char p[PATH_MAX];
		int r = snprintf(p, sizeof p, "%s/*", dir) < (int)sizeof p ? push_copy(m->collect, p) : 0;
		return r < 0 ? txbox_fail(m->err, r, "secrets: out of memory") : 0;
	}
	if (!d)
		return 0;
	int r = 0;
	for (struct dirent *de; r == 0 && (de = readdir(d));) {
		if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		char p[PATH_MAX];
		if (snprintf(p, sizeof p, "%s/%s", dir, de->d_name) < (int)sizeof p)
			r = other_home(m, p);
	}
	return r;
}

/* /home, and wherever else the mount table shows it. */
static int cover_home_dir_entries(masker *m)
{
	struct stat st;
	if (stat("/home", &st) < 0)
		return 0;
	/* a bind of one home is that home's alias: other_home covers it */
	_cleanup_(strv_buf_free) strv_buf alias = {0};
	_cleanup_(strv_buf_free) strv_buf parts = {0};
	_cleanup_free_ char *canon = m->collect ? NULL : realpath("/home", NULL);
	int r = canon ? aliases(m, canon, &st, &alias, &parts) : 0;
	if (r < 0)
		return txbox_fail_errno(m->err, r, "secrets: where else /home is mounted");
	r = cover_dir_entries(m, "/home");
	for (size_t i = 0; r == 0 && !m->collect && i < alias.n; i++)
		r = cover_dir_entries(m, alias.v[i]);
	return r;
}

/* The workspace (ws: a directory descriptor, or the path when ws < 0)
 * and the directories above it are never hidden. */
static int keep_workspace(masker *m, int ws, const char *workspace)
{
	if (ws < 0 && !workspace)
		return 0;
	int fd = ws >= 0 ? fcntl(ws, F_DUPFD_CLOEXEC, 3) : open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return txbox_fail_errno(m->err, -errno, "secrets: opening the workspace %s", workspace ? workspace : "");
	int r = keep_with_ancestors(m, fd);
	return r < 0 ? txbox_fail_errno(m->err, r, "secrets: the directories above %s", workspace ? workspace : "") : 0;
}

/* The caller's homes first (they decide what is never covered), then
 * everybody else's. The workspace as ws_fd or workspace (see keep_workspace). */
static int find_homes(masker *m, const char *env_home, int ws_fd, const char *workspace)
{
	_cleanup_free_ char *own = NULL;
	_cleanup_(strv_buf_free) strv_buf others = {0};
	uid_t uid = getuid();
	int r = read_passwd_homes(uid, &own, &others, m->err);
	if (r < 0)
		return r;
	if (!own)
		own = nss_home(uid);
	if ((r = own_home(m, env_home)) < 0 || (r = own_home(m, own)) < 0 || (r = keep_workspace(m, ws_fd, workspace)) < 0)
		return r;
	if (uid != 0 && (r = other_home(m, "/root")) < 0)
		return r;
	for (size_t i = 0; i < others.n; i++)
		if ((r = other_home(m, others.v[i])) < 0)
			return r;
	return cover_home_dir_entries(m);
}

/* ---- what to hide -------------------------------------------------------- */

/* Built-in patterns under dirfd ("/x" is "x" relative to "/"), but those
 * the policy keeps visible: "!" + prefix + pattern. */
static int mask_builtin(masker *m, int dirfd, const char *base, const char *prefix,
			const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (unmasked(m, prefix, list[i]))
			continue;
		int r = mask_glob(m, dirfd, base, list[i] + (list[i][0] == '/'), 0);
		if (r < 0)
			return r;
	}
	return 0;
}

static bool listed(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, list[i]))
			return true;
	return false;
}

/* The policy's paths: "~" and "~/x" in every home, the others from "/". */
static int mask_policy_paths(masker *m, int rootfd, const char *const *paths)
{
	for (const char *const *p = paths; p && *p; p++) {
		const char *s = *p;
		int r = 0;
		if (!*s || s[0] == '!')
			continue; /* "!X": X stays visible (see unmasked) */
		if ((!strncmp(s, "~/", 2) && listed(s + 2, home_stores, ARRAY_SIZE(home_stores))) ||
		    listed(s, system_secrets, ARRAY_SIZE(system_secrets)))
			continue; /* done already */
		if (s[0] == '~' && (s[1] == '\0' || s[1] == '/')) {
			for (size_t i = 0; r == 0 && i < m->nhomes; i++) {
				_cleanup_close_ int h = open(m->homes[i].path, O_PATH | O_DIRECTORY | O_CLOEXEC);
				if (h >= 0)
					r = mask_glob(m, h, m->homes[i].path, s[1] ? s + 2 : "", 0);
			}
		} else if (s[0] == '/') {
			r = mask_glob(m, rootfd, "", s + 1, 0);
		} else {
			r = txbox_fail(m->err, -EINVAL, "secrets: %s: not an absolute path", s);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static const char *env_value(const char *const *envp, const char *name)
{
	size_t n = strlen(name);
	for (const char *const *e = envp; e && *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

/* The absolute paths one entry of a variable's value names, the way the
 * tools reading it do: "~/x" in each of the caller's homes (botocore,
 * kubectl and libpq expand it themselves), a relative path from where the
 * command starts (init still stands in the caller's directory), an
 * absolute one as it is. Appended to out; an entry too long is skipped. */
static int env_entry_paths(const masker *m, const char *p, size_t n, strv_buf *out)
{
	char one[PATH_MAX];
	if (n == 0 || n >= sizeof one)
		return 0;
	snprintf(one, sizeof one, "%.*s", (int)n, p);
	if (one[0] == '/')
		return push_copy(out, one);
	if (one[0] == '~' && (one[1] == '\0' || one[1] == '/')) {
		for (size_t h = 0; h < m->nhomes; h++) {
			char *abs = NULL;
			if (asprintf(&abs, "%s%s", m->homes[h].path, one + 1) < 0)
				return -ENOMEM;
			int r = strv_buf_push(out, abs);
			if (r < 0)
				return r;
		}
		return 0;
	}
	char *abs = realpath(one, NULL); /* absent: nothing there to read yet */
	return abs ? strv_buf_push(out, abs) : 0;
}

/* Every path the variable's value names (a ':'-separated list). */
static int env_value_paths(const masker *m, const char *v, strv_buf *out)
{
	int r = 0;
	for (const char *p = v; r == 0 && p && *p; p += strcspn(p, ":"), p += *p == ':')
		r = env_entry_paths(m, p, strcspn(p, ":"), out);
	return r;
}

/* Stores the caller's environment moved out of the home. */
static int mask_env_stores(masker *m, int rootfd, const char *const *envp)
{
	int r = 0;
	_cleanup_(strv_buf_free) strv_buf files = {0};
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(env_store_vars); i++)
		r = env_value_paths(m, env_value(envp, env_store_vars[i]), &files);
	for (size_t k = 0; r == 0 && k < files.n; k++)
		if (files.v[k][1])
			r = mask_at(m, rootfd, "", files.v[k] + 1); /* a path, taken literally */
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(env_store_dirs); i++) {
		_cleanup_(strv_buf_free) strv_buf dirs = {0};
		size_t n = strlen(env_store_dirs[i].home_rel);
		r = env_value_paths(m, env_value(envp, env_store_dirs[i].var), &dirs);
		for (size_t k = 0; r == 0 && k < dirs.n; k++) {
			_cleanup_close_ int d = open(dirs.v[k], O_PATH | O_DIRECTORY | O_CLOEXEC);
			for (size_t j = 0; r == 0 && d >= 0 && j < ARRAY_SIZE(home_stores); j++)
				if (!strncmp(home_stores[j], env_store_dirs[i].home_rel, n) &&
				    !unmasked(m, "~/", home_stores[j]))
					r = mask_glob(m, d, dirs.v[k], home_stores[j] + n, 0);
		}
	}
	return r;
}

/* ---- fail-closed reads (Landlock) ---------------------------------------- */

/* A directory on the way to a masked name ("split"): each of its entries
 * gets a rule of its own but the masked ones and the splits below it. An
 * entry the host creates or renames in later has no rule: unreadable. */
typedef struct lnode {
	char *path;     /* canonical; "" for "/" */
	int fd;         /* O_RDONLY | O_DIRECTORY */
	char *dents;    /* its getdents64 records, once listed */
	size_t dlen;
	const struct dirent64 **idx; /* the records sorted by name */
	size_t nidx;
	strv_buf pats;  /* patterns relative to it */
	size_t pdone;   /* how many of pats were matched against the listing */
	strv_buf hits;  /* entries that get no rule here */
	size_t nmasked; /* how many of hits are hidden (not split directories, not symlinks) */
	bool whole;     /* hidden whole after it was split: no rule in it or below */
	bool blind;     /* searchable, not listable: only names the patterns spell are found */
	bool needed;    /* holds something hidden, or may gain it (see mark_needed) */
	long parent;    /* index of the split directory above, -1 for "/" */
} lnode;

typedef struct stat_memo stat_memo;

typedef struct lsplit {
	lnode *v;
	size_t n, cap;
	strv_buf keep;     /* canonical: the workspace, the caller's homes */
	strv_buf homes;    /* canonical: the caller's homes (home_classes[] apply below them) */
	strv_buf masked;   /* canonical paths masked, for the mount table's aliases */
	devino_set ids;    /* what split directories and masked paths are: never granted */
	const char *ws;    /* canonical workspace, or NULL */
	dev_t private_dev; /* the sandbox's own tmpfs: nothing of the host's */
	bool rootless;     /* host root is not mapped: unmapped owners are others */
	uid_t mapped_lo[8], mapped_hi[8]; /* the uid ranges mapped into the sandbox */
	size_t nmapped;
	masker *m;         /* mounts for masks inside the workspace (the sandbox's overlay) */
	int keep_fds_below; /* a granted entry's descriptor stays open below this */
	stat_memo *memo;    /* lstat results while patterns are canonicalised, or NULL */
	txbox_error *err;
} lsplit;

static void stat_memo_free(stat_memo **m);

static void lsplit_done(lsplit *ls)
{
	for (size_t i = 0; i < ls->n; i++) {
		lnode *d = &ls->v[i];
		if (d->fd >= 0)
			close(d->fd);
		free(d->path);
		free(d->dents);
		free(d->idx);
		strv_buf_free(&d->pats);
		strv_buf_free(&d->hits);
	}
	free(ls->v);
	stat_memo_free(&ls->memo);
	strv_buf_free(&ls->keep);
	strv_buf_free(&ls->homes);
	strv_buf_free(&ls->masked);
	free(ls->ids.v);
}

/* p is dir itself or below it (canonical paths, "" is "/"). */
static bool at_or_below(const char *p, const char *dir)
{
	size_t n = strlen(dir);
	return !strncmp(p, dir, n) && (p[n] == '\0' || p[n] == '/');
}

/* Never masked: a kept path or a directory above one. */
static bool kept(const lsplit *ls, const char *p)
{
	for (size_t i = 0; i < ls->keep.n; i++)
		if (at_or_below(ls->keep.v[i], p))
			return true;
	return false;
}

static int node_new(lsplit *ls, const char *path, int fd)
{
	if (ls->n == ls->cap) {
		size_t cap = ls->cap ? 2 * ls->cap : 16;
		lnode *v = realloc(ls->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		ls->v = v, ls->cap = cap;
	}
	char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	ls->v[ls->n] = (lnode){.path = p, .fd = fd, .parent = -1};
	return (int)ls->n++;
}

#define MAX_LINK_HOPS 40

/* lstat results of one canonicalisation pass, by path: the ~200
 * patterns share their prefixes (the home, ~/.config), and each prefix
 * would otherwise be looked up once per pattern. What it holds is one
 * observation of the host, as a single walk would see it. */
#define STAT_MEMO_SLOTS 512
struct stat_memo {
	struct {
		char *path;
		int err;     /* 0, or lstat's errno */
		mode_t mode; /* the type bits */
	} slot[STAT_MEMO_SLOTS];
};

static void stat_memo_free(stat_memo **m)
{
	if (!*m)
		return;
	for (size_t i = 0; i < STAT_MEMO_SLOTS; i++)
		free((*m)->slot[i].path);
	free(*m);
	*m = NULL;
}

static size_t path_hash(const char *s)
{
	size_t h = 14695981039346656037ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* lstat through the memo (NULL: none); returns 0 or -1 with errno. */
static int memo_lstat(stat_memo *m, const char *path, mode_t *mode)
{
	size_t i = m ? path_hash(path) % STAT_MEMO_SLOTS : 0;
	for (size_t probe = 0; m && probe < 8; probe++, i = (i + 1) % STAT_MEMO_SLOTS) {
		if (!m->slot[i].path)
			break;
		if (!strcmp(m->slot[i].path, path)) {
			*mode = m->slot[i].mode;
			errno = m->slot[i].err;
			return m->slot[i].err ? -1 : 0;
		}
	}
	struct stat st;
	int r = lstat(path, &st), err = r < 0 ? errno : 0;
	*mode = r < 0 ? 0 : st.st_mode;
	if (m && !m->slot[i].path && (m->slot[i].path = strdup(path))) {
		m->slot[i].err = err;
		m->slot[i].mode = *mode;
	}
	errno = err;
	return r;
}

/* Drop the last component of the canonical path in cur ("" is "/"). */
static void canon_pop(char *cur, size_t *len)
{
	while (*len > 0 && cur[*len - 1] != '/')
		(*len)--;
	if (*len > 0)
		(*len)--;
	cur[*len] = '\0';
}

/* Splice the symlink that is cur's last component: what it points to,
 * then what was left of the pattern, becomes the rest to resolve. */
static int canon_follow(char *cur, size_t *len, char *todo, size_t todosz, const char *rest)
{
	char t[PATH_MAX], next[PATH_MAX];
	ssize_t k = readlink(cur, t, sizeof t - 1);
	if (k <= 0)
		return -1;
	t[k] = '\0';
	canon_pop(cur, len);
	if (t[0] == '/')
		*len = 0, cur[0] = '\0';
	if (snprintf(next, sizeof next, "%s/%s", t, rest) >= (int)sizeof next)
		return -1;
	snprintf(todo, todosz, "%s", next);
	return 0;
}

/* The pattern abs as the kernel resolves it: the prefix that exists with
 * every symlink followed (chains and dangling ones included: a target
 * the host creates later is where the secret will be), the rest
 * normalised lexically ("." and empty components dropped, ".." removing
 * the one before). A glob component or a missing name ends the
 * resolution (a ".." back above it resumes it); the walk matches the
 * rest against listings. Returns false when the result does not fit. */
static bool canon_pattern(stat_memo *memo, bool resolve, const char *abs, char *out, size_t outsz)
{
	char todo[PATH_MAX];
	size_t len = 0, litlen = 0;
	bool lit = false;
	int hops = 0;
	out[0] = '\0';
	if (snprintf(todo, sizeof todo, "%s", abs) >= (int)sizeof todo)
		return false;
	for (char *p = todo; *p;) {
		while (*p == '/')
			p++;
		char *end = strchrnul(p, '/');
		size_t n = (size_t)(end - p);
		if (n == 0 || (n == 1 && p[0] == '.')) {
			p = end;
			continue;
		}
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			canon_pop(out, &len);
			lit = lit && len > litlen;
			p = end;
			continue;
		}
		if (len + 1 + n >= outsz)
			return false;
		size_t before = len;
		out[len++] = '/';
		memcpy(out + len, p, n);
		out[len += n] = '\0';
		p = end;
		if (lit || !resolve)
			continue;
		mode_t mode;
		if (memchr(out + before, '*', n + 1) || memchr(out + before, '?', n + 1) ||
		    memchr(out + before, '[', n + 1) || memo_lstat(memo, out, &mode) < 0) {
			lit = true, litlen = before;
		} else if (S_ISLNK(mode)) {
			if (++hops > MAX_LINK_HOPS || canon_follow(out, &len, todo, sizeof todo, p) < 0)
				lit = true, litlen = before;
			else
				p = todo;
		}
	}
	return true;
}

static int ls_push(lsplit *ls, const char *c)
{
	if (at_or_below(c, "/proc"))
		return 0; /* a magic link (~/.ssh -> /proc/self/fd/3): no place */
	while (*c == '/')
		c++;
	return *c ? push_copy(&ls->v[0].pats, c) : 0;
}

/* Hide abs (a pattern: glob components allowed) as the kernel resolves
 * it now (the walk compares canonical paths, component by component)
 * and as spelt, normalised only lexically: the host may replace a
 * symlink on the way (~/.ssh -> keys) by the directory itself before the
 * walk lists it; the walk follows any link it meets on the spelt path. */
static int ls_add(lsplit *ls, const char *abs)
{
	char c[PATH_MAX], l[PATH_MAX];
	if (!canon_pattern(ls->memo, true, abs, c, sizeof c))
		return 0; /* no such path */
	int r = ls_push(ls, c);
	if (r < 0 || !canon_pattern(NULL, false, abs, l, sizeof l) || !strcmp(l, c))
		return r;
	return ls_push(ls, l);
}

static int ls_add2(lsplit *ls, const char *dir, const char *rel)
{
	char p[PATH_MAX];
	if (snprintf(p, sizeof p, "%s/%s", dir, rel) >= (int)sizeof p)
		return 0; /* no such path */
	return ls_add(ls, p);
}

static int by_name(const void *a, const void *b)
{
	return strcmp((*(const struct dirent64 *const *)a)->d_name, (*(const struct dirent64 *const *)b)->d_name);
}

static bool dot_or_dotdot(const char *n);

/* Read the whole directory and index it by name. */
static int node_list(lnode *d)
{
	size_t cap = 0;
	if (d->blind) {
		d->dents = malloc(1);
		d->idx = malloc(sizeof(*d->idx));
		return d->dents && d->idx ? 0 : -ENOMEM;
	}
	for (;;) {
		if (cap - d->dlen < 8192) {
			char *b = realloc(d->dents, cap += 32768);
			if (!b)
				return -ENOMEM;
			d->dents = b;
		}
		ssize_t n = getdents64(d->fd, d->dents + d->dlen, cap - d->dlen);
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		d->dlen += (size_t)n;
	}
	size_t n = 0;
	for (size_t off = 0; off < d->dlen; n++)
		off += ((const struct dirent64 *)(const void *)(d->dents + off))->d_reclen;
	d->idx = malloc((n ? n : 1) * sizeof(*d->idx));
	if (!d->idx)
		return -ENOMEM;
	for (size_t off = 0; off < d->dlen;) {
		const struct dirent64 *e = (const void *)(d->dents + off);
		off += e->d_reclen;
		if (!dot_or_dotdot(e->d_name))
			d->idx[d->nidx++] = e;
	}
	qsort(d->idx, d->nidx, sizeof(*d->idx), by_name);
	return 0;
}

static bool dot_or_dotdot(const char *n)
{
	return n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2]));
}

static bool hit(const lnode *d, const char *name)
{
	for (size_t i = 0; i < d->hits.n; i++)
		if (!strcmp(d->hits.v[i], name))
			return true;
	return false;
}

static unsigned char mode_type(mode_t mode)
{
	return S_ISDIR(mode) ? DT_DIR : S_ISLNK(mode) ? DT_LNK : S_ISCHR(mode) ? DT_CHR : S_ISBLK(mode) ? DT_BLK : DT_REG;
}

static unsigned char entry_type(int dirfd, const struct dirent64 *e)
{
	struct stat st;
	if (e->d_type != DT_UNKNOWN)
		return e->d_type;
	if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return DT_UNKNOWN;
	return mode_type(st.st_mode);
}

/* fd (identity st, path full) is the view's private tmpfs, which holds
 * nothing of the host's and gets one rule whole: no split. But the
 * workspace may lie below it (/tmp/ws: its overlay is mounted back at its
 * path), and what rest names there is masked by mounts, as anywhere in
 * the workspace. The tmpfs holds nothing but the way down to it yet:
 * mask_glob, which follows the real tree, finds nothing else. */
static int private_to_workspace(lsplit *ls, int fd, const struct stat *st, const char *full, const char *rest)
{
	if (st->st_dev != ls->private_dev || !ls->ws || !at_or_below(ls->ws, full))
		return 0;
	return mask_glob(ls->m, fd, full, rest, 0);
}

/* A directory named by a pattern's inner component: split it, unless it
 * is the sandbox's own (kernel filesystems, the private tmpfs) or lies in
 * the workspace (masked there by mounts on the sandbox's overlay). */
static int split_dir(lsplit *ls, size_t i, const char *name, const char *full, const char *rest)
{
	if (ls->ws && at_or_below(full, ls->ws)) {
		_cleanup_close_ int fd = openat(ls->v[i].fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		return fd < 0 ? 0 : mask_glob(ls->m, fd, full, rest, 0);
	}
	for (size_t j = 0; j < ls->n; j++)
		if (!strcmp(ls->v[j].path, full))
			return push_copy(&ls->v[j].pats, rest); /* name is a hit already */
	if (hit(&ls->v[i], name))
		return 0; /* hidden whole already */
	int fd = openat(ls->v[i].fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	bool blind = fd < 0 && errno == EACCES;
	if (blind) /* its entries are unknown: none gets a rule but the splits */
		fd = openat(ls->v[i].fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	struct statfs sf;
	if (fd < 0)
		return unreachable(errno) ? 0 : txbox_fail_errno(ls->err, -errno, "secrets: opening %s", full);
	if (fstat(fd, &st) < 0 || fstatfs(fd, &sf) < 0 || st.st_dev == ls->private_dev ||
	    sf.f_type == PROC_SUPER_MAGIC || sf.f_type == SYSFS_MAGIC) {
		int r = private_to_workspace(ls, fd, &st, full, rest);
		close(fd);
		return r;
	}
	int j = node_new(ls, full, fd);
	if (j < 0) {
		close(fd);
		return j;
	}
	ls->v[j].parent = (long)i;
	ls->v[j].blind = ls->v[j].needed = blind;
	if (push_copy(&ls->v[j].pats, rest) < 0 || push_copy(&ls->v[i].hits, name) < 0)
		return -ENOMEM;
	return 0;
}

/* A split directory named whole by a later pattern ("~/.config" after
 * ".config/gh"): nothing in it or below gets a rule. */
static int hide_split(lsplit *ls, size_t i, const char *full)
{
	for (size_t j = 0; j < ls->n; j++)
		if (!strcmp(ls->v[j].path, full) && !ls->v[j].whole) {
			ls->v[j].whole = true;
			ls->v[i].nmasked++;
			return push_copy(&ls->masked, full);
		}
	return 0; /* hidden already */
}

/* The command could read (a directory: enter) name: only then is hiding
 * it worth a split. Rootless, unreadable now (/etc/shadow 0640
 * root:shadow, /root 0700) stays so: the command cannot change an
 * unmapped owner's modes. Root reads everything (no syscall asked). Any
 * other answer than EACCES counts as readable. */
static bool command_can_read(const lsplit *ls, int dirfd, const char *name, unsigned char type)
{
	if (!ls->rootless)
		return true;
	int how = type == DT_DIR ? X_OK : R_OK;
	return faccessat(dirfd, name, how, AT_EACCESS | AT_SYMLINK_NOFOLLOW) == 0 || errno != EACCES;
}

/* A directory hidden whole that holds the workspace (~/.codex/worktrees/w1):
 * everything in it but the way down to the workspace is hidden. */
static int split_to_workspace(lsplit *ls, size_t i, const char *name, const char *full)
{
	int r = split_dir(ls, i, name, full, "*");
	return r < 0 ? r : split_dir(ls, i, name, full, ".*");
}

/* The entry name of node i matched the last component of a pattern. */
static int mask_entry(lsplit *ls, size_t i, const char *name, const char *full, unsigned char type)
{
	if (type == DT_DIR && ls->ws && strcmp(full, ls->ws) && at_or_below(ls->ws, full))
		return split_to_workspace(ls, i, name, full);
	if (kept(ls, full) || type == DT_CHR || type == DT_BLK) /* HISTFILE=/dev/null */
		return 0;
	if (ls->ws && at_or_below(full, ls->ws))
		return mask_at(ls->m, ls->v[i].fd, ls->v[i].path, name);
	if (hit(&ls->v[i], name))
		return hide_split(ls, i, full);
	if (!command_can_read(ls, ls->v[i].fd, name, type))
		return 0;
	if (push_copy(&ls->v[i].hits, name) < 0 || push_copy(&ls->masked, full) < 0)
		return -ENOMEM;
	ls->v[i].nmasked++;
	return 0;
}

/* A symlink a pattern's component matched (a glob, a name the host
 * made a link since): the rest of the pattern continues at its target,
 * resolved like any pattern (dangling, chains). A link to a kept place
 * named as the last component is not followed: the home itself. */
static int match_link(lsplit *ls, size_t i, const char *name, const char *full, const char *rest)
{
	char p[PATH_MAX], c[PATH_MAX];
	int r = push_copy(&ls->v[i].hits, name);
	if (r < 0 || snprintf(p, sizeof p, "%s/%s", full, rest) >= (int)sizeof p || !canon_pattern(ls->memo, true, p, c, sizeof c))
		return r;
	if (at_or_below(c, full) || (!*rest && kept(ls, c)))
		return 0; /* a loop, or nothing to hide */
	return ls_add(ls, c);
}

/* One pattern against one entry of node i. */
static int match_entry(lsplit *ls, size_t i, const struct dirent64 *e, const char *rest)
{
	char full[PATH_MAX];
	if (snprintf(full, sizeof full, "%s/%s", ls->v[i].path, e->d_name) >= (int)sizeof full)
		return 0;
	unsigned char type = entry_type(ls->v[i].fd, e);
	if (type == DT_LNK) /* what it points to is where the secret is readable */
		return match_link(ls, i, e->d_name, full, rest);
	if (!*rest)
		return mask_entry(ls, i, e->d_name, full, type);
	return type == DT_DIR ? split_dir(ls, i, e->d_name, full, rest) : 0;
}

/* A name in a directory that cannot be listed, looked up: e (its name
 * set) is filled as a listing would have. */
static bool blind_lookup(const lnode *d, struct dirent64 *e)
{
	struct stat st;
	if (dot_or_dotdot(e->d_name) || fstatat(d->fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	e->d_ino = st.st_ino;
	e->d_type = mode_type(st.st_mode);
	return true;
}

/* The entries of node i a component names: itself (by binary search),
 * and for a glob what it matches (a hidden name only by a glob starting
 * with a dot). */
static int match_comp(lsplit *ls, size_t i, const char *comp, const char *rest)
{
	const lnode *d = &ls->v[i];
	struct dirent64 key_storage;
	const struct dirent64 *key = &key_storage;
	size_t n = strlen(comp);
	if (n >= sizeof key_storage.d_name)
		return 0;
	memcpy(key_storage.d_name, comp, n + 1);
	const struct dirent64 **lit = bsearch(&key, d->idx, d->nidx, sizeof(*d->idx), by_name);
	if (!lit && d->blind && blind_lookup(d, &key_storage))
		lit = &key;
	int r = lit ? match_entry(ls, i, *lit, rest) : 0;
	if (r < 0 || !strpbrk(comp, "*?["))
		return r;
	for (size_t k = 0; r == 0 && k < ls->v[i].nidx; k++) {
		const struct dirent64 *e = ls->v[i].idx[k];
		if (strcmp(comp, e->d_name) != 0 && fnmatch(comp, e->d_name, FNM_PERIOD) == 0)
			r = match_entry(ls, i, e, rest);
	}
	return r;
}

static bool entry_secret(const char *entry, size_t namelen, const char *const *deny, const char *const *envp);

/* One line of a shell start-up file assigns a secret: "[export ]NAME=VALUE"
 * (also declare/typeset -x, readonly, csh's setenv, fish's set -gx) with a
 * literal value that is not a path, judged like the environment (env
 * filter: names, then values). A computed value ($(pass show x), $VAR)
 * or a path (SSH_AUTH_SOCK=/run/...) holds no secret in the file. */
static bool rc_line_secret(const char *l)
{
	static const char *const lead[] = {"export ", "declare -x ", "typeset -x ", "readonly ", "setenv ",
					   "set -gx ", "set -x ", "set -Ux "};
	char entry[4096];
	l += strspn(l, " \t");
	for (size_t k = 0; k < ARRAY_SIZE(lead); k++)
		if (!strncmp(l, lead[k], strlen(lead[k])))
			l += strlen(lead[k]) + strspn(l + strlen(lead[k]), " \t");
	size_t n = strspn(l, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
	if (n == 0 || (l[n] != '=' && l[n] != ' ' && l[n] != '\t'))
		return false;
	const char *v = l + n + 1 + strspn(l + n + 1, " \t");
	size_t vn = strcspn(v, "\n");
	if (vn && (v[0] == '\'' || v[0] == '"'))
		v++, vn--;
	if (vn && (v[vn - 1] == '\'' || v[vn - 1] == '"'))
		vn--;
	if (vn == 0 || n > 256 || strchr("/~.", v[0]) || memchr(v, '$', vn) || memchr(v, '`', vn))
		return false;
	snprintf(entry, sizeof entry, "%.*s=%.*s", (int)n, l, (int)vn, v); /* a long value: its start */
	return entry_secret(entry, n, NULL, NULL);
}

/* The start-up file name in dirfd, opened for reading, or -1. A symlink
 * (a dotfiles manager's ~/.bashrc -> dotfiles/bashrc) leads to its
 * target, which is what the shell reads: the kernel bounds the chain,
 * magic links lead nowhere, and only a regular file is opened (opening a
 * device or a FIFO may act). */
static int rc_open(int dirfd, const char *name)
{
	struct stat st;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 && errno == ELOOP && fstatat(dirfd, name, &st, 0) == 0 && S_ISREG(st.st_mode))
		fd = open_store(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	return fd;
}

/* The start-up file name in dirfd assigns a secret somewhere in its first
 * MiB (not a regular file, or unreadable: no). */
static bool rc_has_secret(int dirfd, const char *name)
{
	_cleanup_close_ int fd = rc_open(dirfd, name);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	size_t cap = st.st_size > 0 && st.st_size < (1 << 20) ? (size_t)st.st_size : (1 << 20), len = 0;
	_cleanup_free_ char *buf = malloc(cap + 1);
	if (!buf)
		return true; /* fail closed */
	for (ssize_t got; len < cap && (got = read(fd, buf + len, cap - len)) > 0;)
		len += (size_t)got;
	buf[len] = '\0';
	for (const char *l = buf; l < buf + len; l += strcspn(l, "\n") + 1)
		if (rc_line_secret(l))
			return true;
	return false;
}

/* Where p lies below a caller's home ("" for the home itself), or NULL. */
static const char *in_home(const lsplit *ls, const char *p)
{
	for (size_t h = 0; h < ls->homes.n; h++)
		if (at_or_below(p, ls->homes.v[h])) {
			const char *rel = p + strlen(ls->homes.v[h]);
			return *rel == '/' ? rel + 1 : rel;
		}
	return NULL;
}

static bool class_name(const char *name)
{
	for (size_t c = 0; c < ARRAY_SIZE(home_classes); c++)
		if (fnmatch(home_classes[c], name, 0) == 0)
			return true;
	return false;
}

/* home_classes[], and the shell start-up files that assign secrets,
 * against the listing of a split directory of a caller's home. */
static int match_classes(lsplit *ls, size_t i)
{
	const char *dir = in_home(ls, ls->v[i].path);
	if (!dir)
		return 0;
	bool top = !*dir;
	int r = 0;
	for (size_t k = 0; r == 0 && k < ls->v[i].nidx; k++) {
		const struct dirent64 *e = ls->v[i].idx[k];
		char rel[PATH_MAX]; /* "!~/.cache/tiktoken" keeps one visible */
		snprintf(rel, sizeof rel, "%s%s%s", dir, top ? "" : "/", e->d_name);
		if (unmasked(ls->m, "~/", rel))
			continue;
		if (class_name(e->d_name) ||
		    (top && listed(e->d_name, shell_rc, ARRAY_SIZE(shell_rc)) && rc_has_secret(ls->v[i].fd, e->d_name)))
			r = match_entry(ls, i, e, "");
	}
	return r;
}

/* Match node i's new patterns against its listing. */
static int node_expand(lsplit *ls, size_t i)
{
	int r;
	if (!ls->v[i].dents) {
		if ((r = node_list(&ls->v[i])) < 0)
			return txbox_fail_errno(ls->err, r, "secrets: listing %s/", ls->v[i].path);
		if ((r = match_classes(ls, i)) < 0)
			return r == -ENOMEM ? txbox_fail(ls->err, r, "secrets: out of memory") : r;
	}
	while (ls->v[i].pdone < ls->v[i].pats.n) {
		char pat[PATH_MAX];
		snprintf(pat, sizeof pat, "%s", ls->v[i].pats.v[ls->v[i].pdone++]);
		char *rest = strchrnul(pat, '/');
		if (*rest)
			*rest++ = '\0';
		while (*rest == '/')
			rest++;
		if (!strcmp(pat, ".") || !*pat) {
			if (*rest && (r = push_copy(&ls->v[i].pats, rest)) < 0)
				return r;
			continue;
		}
		if ((r = match_comp(ls, i, pat, rest)) < 0)
			return r == -ENOMEM ? txbox_fail(ls->err, r, "secrets: out of memory") : r;
	}
	return 0;
}

static int expand_all(lsplit *ls)
{
	for (bool more = true; more;) {
		more = false;
		for (size_t i = 0; i < ls->n; i++) {
			if (ls->v[i].pdone == ls->v[i].pats.n && ls->v[i].dents)
				continue;
			int r = node_expand(ls, i);
			if (r < 0)
				return r;
			more = true;
		}
	}
	return 0;
}

/* Bind mounts showing a masked path or a split directory elsewhere: their
 * mount points are masked too (a rule above them would reach the same
 * inodes); a mount showing a part of a masked path is masked whole. A
 * point below another one is left out: the alias of a split directory,
 * masked whole, shows the same inodes, whose rules are those of the
 * original (a split made there would put rules on split directories). */
static int collect_aliases(lsplit *ls, strv_buf *points)
{
	size_t nmasked = ls->masked.n;
	for (size_t k = 0; k < nmasked + ls->n; k++) {
		bool node = k >= nmasked;
		const char *p = node ? ls->v[k - nmasked].path : ls->masked.v[k];
		struct stat st;
		_cleanup_(strv_buf_free) strv_buf alias = {0};
		_cleanup_(strv_buf_free) strv_buf inner = {0};
		if (lstat(*p ? p : "/", &st) < 0)
			continue;
		if (!node && devino_add(&ls->ids, &st) < 0)
			return txbox_fail(ls->err, -ENOMEM, "secrets: out of memory");
		int r = aliases(ls->m, *p ? p : "/", &st, &alias, &inner);
		for (size_t a = 0; r == 0 && a < alias.n + (node ? 0 : inner.n); a++)
			r = push_copy(points, a < alias.n ? alias.v[a] : inner.v[a - alias.n]);
		if (r < 0)
			return txbox_fail_errno(ls->err, r, "secrets: where else %s is mounted", p);
	}
	return 0;
}

static bool below_another(const strv_buf *points, size_t i)
{
	for (size_t j = 0; j < points->n; j++)
		if (j != i && strcmp(points->v[i], points->v[j]) != 0 && at_or_below(points->v[i], points->v[j]))
			return true;
	return false;
}

static int mask_aliases(lsplit *ls)
{
	int r = mounts_read(ls->m);
	if (r < 0)
		return txbox_fail_errno(ls->err, r, "secrets: reading /proc/self/mountinfo");
	_cleanup_(strv_buf_free) strv_buf points = {0};
	if ((r = collect_aliases(ls, &points)) < 0)
		return r;
	for (size_t i = 0; i < points.n; i++)
		if (!kept(ls, points.v[i]) && !below_another(&points, i) && (r = ls_add(ls, points.v[i])) < 0)
			return txbox_fail(ls->err, r, "secrets: out of memory");
	return expand_all(ls);
}

/* Does the mount table show a mount on an entry of dir (canonical)? */
static bool has_mount_below(const masker *m, const char *dir)
{
	for (size_t i = 0; i < m->nmounts; i++) {
		const char *rest = below(m->mounts[i].point, *dir ? dir : "/");
		if (rest && *rest)
			return true;
	}
	return false;
}

/* An entry that is a split directory or a masked path under another name
 * (a bind mount of one) gets no rule: identified by its inode, read from
 * the listing, or from the entry itself where mounts may cover entries. */
static bool split_or_masked(const lsplit *ls, dev_t dev, bool mounts, const struct dirent64 *e, int fd)
{
	struct stat st = {.st_dev = dev, .st_ino = e->d_ino};
	if (mounts && fstat(fd, &st) < 0)
		return true;
	return devino_has(&ls->ids, &st);
}

/* The split directory below node i named name, or -1. */
static long child_node(const lsplit *ls, size_t i, const char *name)
{
	size_t n = strlen(ls->v[i].path);
	for (size_t j = i + 1; j < ls->n; j++)
		if (ls->v[j].parent == (long)i && !strcmp(ls->v[j].path + n + 1, name))
			return (long)j;
	return -1;
}

/* A split directory that hides nothing need not be split when nobody the
 * command could be can add a name to it during the run: rootless, a
 * directory of an unmapped owner (host root, for /etc) that its group and
 * others cannot write. Root's command reads what host root adds, so as
 * root every split stays (fail closed on names created during the run). */
static bool may_gain_names(const lsplit *ls, const lnode *d)
{
	struct stat st;
	if (!ls->rootless || fstat(d->fd, &st) < 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))
		return true;
	for (size_t k = 0; k < ls->nmapped; k++)
		if (st.st_uid >= ls->mapped_lo[k] && st.st_uid < ls->mapped_hi[k])
			return true;
	return false;
}

/* Children come after their parents: one pass from the end. */
static void mark_needed(lsplit *ls)
{
	for (size_t i = ls->n; i-- > 0;) {
		lnode *d = &ls->v[i];
		d->needed = d->needed || d->nmasked > 0 || d->whole || may_gain_names(ls, d);
		if (d->needed && d->parent >= 0)
			ls->v[d->parent].needed = true;
	}
}

/* Node i is split and gets rules: needed, and not inside a directory
 * hidden whole. */
static bool granted(const lsplit *ls, size_t i)
{
	if (!ls->v[i].needed)
		return false;
	for (long j = (long)i; j >= 0; j = ls->v[j].parent)
		if (ls->v[j].whole)
			return false;
	return true;
}

/* Split directories and masked paths are never granted by inode (a bind
 * of one elsewhere shows the same inode). */
static int collect_ids(lsplit *ls)
{
	struct stat st;
	for (size_t i = 0; i < ls->n; i++)
		if (ls->v[i].needed && (fstat(ls->v[i].fd, &st) < 0 || devino_add(&ls->ids, &st) < 0))
			return txbox_fail_errno(ls->err, errno ? -errno : -ENOMEM, "secrets: %s/", ls->v[i].path);
	return 0;
}

static int grant_entries(lsplit *ls, int rfd, int abi, size_t i)
{
	const lnode *d = &ls->v[i];
	struct stat dst;
	if (fstat(d->fd, &dst) < 0)
		return txbox_fail_errno(ls->err, -errno, "secrets: %s/", d->path);
	bool mounts = has_mount_below(ls->m, d->path);
	for (size_t k = 0; k < d->nidx; k++) {
		const struct dirent64 *e = d->idx[k];
		unsigned char type = entry_type(d->fd, e);
		if (type == DT_LNK)
			continue;
		if (hit(d, e->d_name)) {
			long c = child_node(ls, i, e->d_name);
			if (c < 0 || ls->v[c].needed)
				continue; /* hidden, or split: its entries get the rules */
		}
		int fd = openat(d->fd, e->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		bool skip = fd < 0 || split_or_masked(ls, dst.st_dev, mounts, e, fd);
		int r = skip ? 0 : landlock_grant_read(rfd, fd, type == DT_DIR, abi);
		/* The helper's exit closes the rest, after it said it is done. */
		if (fd >= 0 && (skip || fd >= ls->keep_fds_below))
			close(fd);
		if (skip)
			continue; /* gone since it was listed: its successor stays unreadable */
		if (r < 0 && r != -EBADFD)
			return txbox_fail_errno(ls->err, r, "secrets: a Landlock rule for %s/%s", d->path, e->d_name);
	}
	return 0;
}

/* Every entry of every split directory but the masked ones, and the
 * workspace (the overlay's root: its own inode), readable. */
static int grant_all(lsplit *ls, int rfd, int abi)
{
	int r;
	mark_needed(ls);
	if ((r = collect_ids(ls)) < 0)
		return r;
	if (!ls->v[0].needed && (r = landlock_grant_read(rfd, ls->v[0].fd, true, abi)) < 0)
		return txbox_fail_errno(ls->err, r, "secrets: a Landlock rule for /");
	for (size_t i = 0; i < ls->n; i++)
		if (granted(ls, i) && (r = grant_entries(ls, rfd, abi, i)) < 0)
			return r;
	if (ls->ws) {
		_cleanup_close_ int w = open(ls->ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (w < 0 || (r = landlock_grant_read(rfd, w, true, abi)) < 0)
			return txbox_fail_errno(ls->err, w < 0 ? -errno : r, "secrets: a Landlock rule for %s", ls->ws);
	}
	return 0;
}

/* What the policy, the built-in lists and the environment hide, as
 * patterns from "/". */
static int ls_patterns(lsplit *ls, const masker *m, const strv_buf *others, const char *const *paths,
		       const char *const *envp)
{
	int r = 0;
	for (size_t h = 0; r == 0 && h < m->nhomes; h++)
		for (size_t j = 0; r == 0 && j < ARRAY_SIZE(home_stores); j++)
			if (!unmasked(m, "~/", home_stores[j]))
				r = ls_add2(ls, m->homes[h].path, home_stores[j]);
	for (size_t j = 0; r == 0 && j < ARRAY_SIZE(system_secrets); j++)
		if (!unmasked(m, "", system_secrets[j]))
			r = ls_add(ls, system_secrets[j]);
	for (size_t j = 0; r == 0 && j < others->n; j++)
		r = ls_add(ls, others->v[j]);
	_cleanup_(strv_buf_free) strv_buf files = {0};
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(env_store_vars); i++)
		r = env_value_paths(m, env_value(envp, env_store_vars[i]), &files);
	for (size_t k = 0; r == 0 && k < files.n; k++) {
		struct stat st;
		if (stat(files.v[k], &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)))
			continue; /* HISTFILE=/dev/null */
		r = ls_add(ls, files.v[k]);
	}
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(env_store_dirs); i++) {
		_cleanup_(strv_buf_free) strv_buf dirs = {0};
		size_t n = strlen(env_store_dirs[i].home_rel);
		r = env_value_paths(m, env_value(envp, env_store_dirs[i].var), &dirs);
		for (size_t k = 0; r == 0 && k < dirs.n; k++)
			for (size_t j = 0; r == 0 && j < ARRAY_SIZE(home_stores); j++)
				if (!strncmp(home_stores[j], env_store_dirs[i].home_rel, n) && !unmasked(m, "~/", home_stores[j]))
					r = ls_add2(ls, dirs.v[k], home_stores[j] + n);
	}
	for (const char *const *p = paths; r == 0 && p && *p; p++) {
		const char *s = *p;
		if (!*s || s[0] == '!' || (!strncmp(s, "~/", 2) && listed(s + 2, home_stores, ARRAY_SIZE(home_stores))) ||
		    listed(s, system_secrets, ARRAY_SIZE(system_secrets)))
			continue;
		if (s[0] == '~' && (s[1] == '\0' || s[1] == '/')) {
			for (size_t h = 0; r == 0 && h < m->nhomes; h++)
				r = ls_add2(ls, m->homes[h].path, s[1] ? s + 2 : ".");
		} else if (s[0] == '/') {
			r = ls_add(ls, s);
		} else {
			return txbox_fail(ls->err, -EINVAL, "secrets: %s: not an absolute path", s);
		}
	}
	return r < 0 ? txbox_fail(ls->err, r, "secrets: out of memory") : 0;
}

/* Who the sandbox's uids are: the ranges mapped into it, and whether
 * host root is one of them (no: rootless). No map to read, or more ranges
 * than kept: treated as root (every split stays). */
static void read_uid_map(lsplit *ls)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/uid_map", "re");
	unsigned long in, out, count;
	ls->rootless = f != NULL;
	while (f && fscanf(f, "%lu %lu %lu", &in, &out, &count) == 3) {
		if (out == 0 || ls->nmapped == ARRAY_SIZE(ls->mapped_lo)) {
			ls->rootless = false;
			return;
		}
		ls->mapped_lo[ls->nmapped] = (uid_t)in;
		ls->mapped_hi[ls->nmapped++] = (uid_t)(in + count > UINT32_MAX ? UINT32_MAX : in + count);
	}
}

static int ls_init(lsplit *ls, masker *m, txbox_error *err)
{
	*ls = (lsplit){.m = m, .err = err};
	/* Closing ~200 O_PATH descriptors costs the command's start a tenth
	 * of a millisecond; leave them to the exit, with room for the rest. */
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur > 128)
		ls->keep_fds_below = nofile.rlim_cur > 4096 ? 4096 : (int)nofile.rlim_cur - 64;
	read_uid_map(ls);
	/* "/" is opened once the view is built: in its mount namespace */
	if (node_new(ls, "", -1) < 0)
		return txbox_fail(err, -ENOMEM, "secrets: out of memory");
	for (size_t h = 0; h < m->nhomes; h++) {
		char *c = realpath(m->homes[h].path, NULL);
		if (c && (strv_buf_push(&ls->keep, c) < 0 || push_copy(&ls->homes, c) < 0))
			return txbox_fail(err, -ENOMEM, "secrets: out of memory");
	}
	return 0;
}

/* Once the view is built: its own /tmp is a tmpfs (never the root's
 * device: nothing of the host's to hide there), and the workspace is
 * the overlay's root (kept as well as the host directory under it). */
static int ls_view(lsplit *ls, const char *workspace)
{
	if ((ls->v[0].fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return txbox_fail_errno(ls->err, -errno, "secrets: opening /");
	struct stat st, root;
	if (stat("/tmp", &st) == 0 && stat("/", &root) == 0 && st.st_dev != root.st_dev)
		ls->private_dev = st.st_dev;
	int r = keep_workspace(ls->m, -1, workspace);
	if (r < 0)
		return r;
	char *w = workspace ? realpath(workspace, NULL) : NULL;
	if (w && strv_buf_push(&ls->keep, w) < 0)
		return txbox_fail(ls->err, -ENOMEM, "secrets: out of memory");
	ls->ws = w && strcmp(w, "/") ? w : NULL;
	return 0;
}

/* Until init says the view is built (one byte; anything else, EOF
 * included: it was not, and the rules would be for nothing). Then back
 * into init's mount namespace (sandbox_ns >= 0: the helper looked at the
 * host from a copy of it, see read_layer_helper), keeping the copy until
 * the exit, so that its teardown comes after the helper's word. */
static int await_view(int go, int sandbox_ns, int *copy_ns, txbox_error *err)
{
	char c = 0;
	ssize_t n;
	do
		n = read(go, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1 || c != 'v')
		return txbox_fail(err, -ECANCELED, "secrets: the sandbox's view was not built");
	if (sandbox_ns < 0)
		return 0;
	*copy_ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (setns(sandbox_ns, CLONE_NEWNS) < 0)
		return txbox_fail_errno(err, -errno, "secrets: entering the sandbox's mount namespace");
	return 0;
}

/* The helper's work. The patterns are canonicalised at once: they name
 * the host's paths, which building the view does not change. What
 * depends on the view waits for it: the listings rules are granted from
 * (a rule on an inode a mount then covers is never consulted: Landlock
 * skips covered mount points), the masks inside the workspace's overlay
 * (mounts), the mount table's aliases, the view's private /tmp. */
static int build_read_layer(masker *m, int abi, int rfd, int go, int sandbox_ns, const char *home, int ws_fd,
			    const char *workspace, const char *const *envp)
{
	_cleanup_(strv_buf_free) strv_buf others = {0};
	m->collect = &others;
	trace_mark("helper: start");
	int r = find_homes(m, home, ws_fd, workspace);
	if (r < 0)
		return r;
	_cleanup_(lsplit_done) lsplit ls;
	if ((r = ls_init(&ls, m, m->err)) < 0)
		return r;
	/* Patterns share prefixes: their lookups go through a memo, then
	 * the walk sees the host afresh. */
	ls.memo = calloc(1, sizeof *ls.memo);
	if ((r = ls_patterns(&ls, m, &others, m->paths, envp)) < 0)
		return r;
	stat_memo_free(&ls.memo);
	trace_mark("helper: patterns");
	int copy_ns = -1; /* left to the exit */
	if ((r = await_view(go, sandbox_ns, &copy_ns, m->err)) < 0)
		return r;
	trace_mark("helper: view built");
	if ((r = ls_view(&ls, workspace)) < 0 || (r = expand_all(&ls)) < 0)
		return r;
	trace_mark("helper: expanded");
	if ((r = mask_aliases(&ls)) < 0)
		return r;
	r = grant_all(&ls, rfd, abi);
	trace_mark("helper: granted");
	return r;
}

static void __attribute__((noreturn))
read_layer_helper(const char *const *paths, int abi, int rfd, int go, int ready, int sandbox_ns,
		  const char *home, int ws_fd, const char *workspace, const char *const *envp)
{
	trace_mark("helper: forked");
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_NAME, "txbox-secrets");
	/* A copy of init's mount namespace as it is now, before the view
	 * replaces /tmp, /run, /dev, /proc and the workspace: the homes and
	 * the patterns are resolved in the host's tree, never half in the
	 * view's (a HOME, a link or a store under /tmp leads to the host's
	 * paths). Init waits for this word before its first mount. */
	if (sandbox_ns >= 0 && unshare(CLONE_NEWNS) < 0) {
		close(sandbox_ns);
		sandbox_ns = -1;
	}
	trace_mark("helper: namespace copied");
	if (send(go, "u", 1, MSG_NOSIGNAL) != 1)
		_exit(2);
	txbox_error e = TXBOX_ERROR_INIT;
	masker m = {.src = -1, .paths = paths, .err = &e};
	int r = build_read_layer(&m, abi, rfd, go, sandbox_ns, home, ws_fd, workspace, envp);
	const char *why = e.message && *e.message ? e.message : "the read layer failed";
	/* Said before exiting: the command need not wait for this
	 * process's teardown (its descriptors, its copy of memory). */
	trace_mark("helper: done");
	if (write(ready, r < 0 ? why : "", r < 0 ? strlen(why) : 1) < 0)
		_exit(2);
	_exit(r < 0);
}

/* Above the descriptors the command's child moves into place (0-5), so
 * that moving them cannot overwrite these. */
static int fd_high(int fd)
{
	int h = fcntl(fd, F_DUPFD_CLOEXEC, 16);
	close(fd);
	return h;
}

int secrets_read_layer_start(const char *const *paths, const char *home, int ws_fd, const char *workspace,
			     const char *const *envp, harden_opts *ho, int *view_built, txbox_error *err)
{
	*view_built = -1;
	int abi = landlock_probe_abi();
	if (abi <= 0)
		return 0;
	_cleanup_close_ int rfd = landlock_read_ruleset(abi);
	int p[2], g[2];
	if (rfd < 0)
		return txbox_fail_errno(err, rfd, "secrets: creating the Landlock ruleset");
	/* Sockets: every command of the sandbox (the validation's too) peeks
	 * at the helper's one word, and init's never raises SIGPIPE when the
	 * helper is gone. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0)
		return txbox_fail_errno(err, -errno, "secrets: a socket for the read layer");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, g) < 0) {
		int e = -errno;
		close(p[0]), close(p[1]);
		return txbox_fail_errno(err, e, "secrets: a socket for the read layer");
	}
	int sandbox_ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC); /* -1: resolve in the view */
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]), close(g[0]);
		read_layer_helper(paths, abi, rfd, g[1], p[1], sandbox_ns, home, ws_fd, workspace, envp);
	}
	int e = pid < 0 ? -errno : 0;
	close(p[1]), close(g[1]);
	if (sandbox_ns >= 0)
		close(sandbox_ns);
	int high = fd_high(steal_fd(rfd)), ready = fd_high(p[0]), go = fd_high(g[0]);
	if (e < 0 || high < 0 || ready < 0 || go < 0) {
		e = e < 0 ? e : -EMFILE;
		if (high >= 0)
			close(high);
		if (ready >= 0)
			close(ready);
		if (go >= 0)
			close(go);
		return txbox_fail_errno(err, e, "secrets: starting the read layer's helper");
	}
	ho->read_layer = true;
	ho->read_ruleset = high;
	ho->read_ready = ready;
	*view_built = go;
	return 0;
}

void secrets_read_layer_copy_made(int view_built)
{
	char c;
	ssize_t n;
	do /* the helper's word, or EOF when it died (its command fails closed) */
		n = recv(view_built, &c, 1, 0);
	while (n < 0 && errno == EINTR);
}

/* A helper that is gone (EPIPE) is no error here: it failed before the
 * view was built and said why on the socket every command reads before
 * it runs, which fails it closed with that reason (EOF alone there: the
 * helper died). Failing here would put "Broken pipe" in its place. */
int secrets_read_layer_view_built(int *view_built)
{
	int r = send(*view_built, "v", 1, MSG_NOSIGNAL) == 1 ? 0 : -errno;
	close(*view_built);
	*view_built = -1;
	return r == -EPIPE || r == -ECONNRESET ? 0 : r;
}

/* The directories of a home the read layer always splits. */
static const char *const home_split_dirs[] = {".", ".config", ".local/share", ".local/state", ".cache"};

/* Without Landlock: home_classes[] and start-up files with a secret in
 * the home and in the directories of it the read layer always splits. */
static int mask_classes(masker *m, int homefd, const char *base)
{
	const char *const *dirs = home_split_dirs;
	int r = 0;
	for (size_t c = 0; r == 0 && c < ARRAY_SIZE(home_split_dirs); c++) {
		int dfd = open_store(homefd, dirs[c], O_RDONLY | O_DIRECTORY);
		_cleanup_closedir_ DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
		if (!d) {
			if (dfd >= 0)
				close(dfd);
			continue; /* absent, or not a directory: nothing to match */
		}
		for (struct dirent *de; r == 0 && (de = readdir(d));) {
			const char *n = de->d_name;
			if (dot_or_dotdot(n) || (c == 0 && unmasked(m, "~/", n)))
				continue;
			if (class_name(n) || (c == 0 && listed(n, shell_rc, ARRAY_SIZE(shell_rc)) && rc_has_secret(dirfd(d), n)))
				r = mask_at(m, dirfd(d), base, n);
		}
	}
	return r;
}

/* Without Landlock: other names of a covered file (~/.netrc.bak, a hard
 * link of ~/.netrc) in the directories of the homes the read layer
 * splits are covered too. An entry still showing the file (a name's
 * stat, which sees the masks already mounted) is one. */
static int mask_hard_links(masker *m, int homefd, const char *base)
{
	int r = 0;
	for (size_t c = 0; r == 0 && m->linked.n && c < ARRAY_SIZE(home_split_dirs); c++) {
		int dfd = open_store(homefd, home_split_dirs[c], O_RDONLY | O_DIRECTORY);
		_cleanup_closedir_ DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
		if (!d) {
			if (dfd >= 0)
				close(dfd);
			continue;
		}
		for (struct dirent *de; r == 0 && (de = readdir(d));) {
			struct stat st;
			if (de->d_type != DT_REG && de->d_type != DT_UNKNOWN)
				continue;
			if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
			    devino_has(&m->linked, &st))
				r = mask_at(m, dirfd(d), base, de->d_name);
		}
	}
	return r;
}

int secrets_mask_paths_by_mounts(const char *const *paths, const char *home, const char *workspace,
				 const char *const *envp, txbox_error *err)
{
	_cleanup_(masker_done) masker m;
	int r = masker_init(&m, paths, err);
	if (r < 0)
		return r;
	if ((r = mounts_read(&m)) < 0)
		return txbox_fail_errno(err, r, "secrets: reading /proc/self/mountinfo");
	if ((r = find_homes(&m, home, -1, workspace)) < 0)
		return r;
	for (size_t i = 0; i < m.nhomes; i++) {
		_cleanup_close_ int h = open(m.homes[i].path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (h >= 0 && ((r = mask_builtin(&m, h, m.homes[i].path, "~/", home_stores, ARRAY_SIZE(home_stores))) < 0 ||
			       (r = mask_classes(&m, h, m.homes[i].path)) < 0))
			return r;
	}
	_cleanup_close_ int rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return txbox_fail_errno(err, -errno, "secrets: opening /");
	if ((r = mask_builtin(&m, rootfd, "", "", system_secrets, ARRAY_SIZE(system_secrets))) < 0 ||
	    (r = mask_env_stores(&m, rootfd, envp)) < 0 || (r = mask_policy_paths(&m, rootfd, paths)) < 0)
		return r;
	for (size_t i = 0; i < m.nhomes; i++) {
		_cleanup_close_ int h = open(m.homes[i].path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (h >= 0 && (r = mask_hard_links(&m, h, m.homes[i].path)) < 0)
			return r;
	}
	return 0;
}

/* ---- environment ------------------------------------------------------- */

/* Names that carry credentials whatever their value (globs, matched
 * case-insensitively). The policy's env_deny adds to them. */
static const char *const secret_names[] = {
	"*TOKEN", "*TOKEN_*", "*SECRET*", "*_KEY", "*_KEY_*", "*PASSWORD*", "*PASSWD*", "*_PASS",
	"*PASSPHRASE*", "*_PWD", "*_PW", "*CREDENTIAL*", "*API_KEY*", "*APIKEY*", "*PRIVATE_KEY*",
	"*ACCESS_KEY*", "*_PAT", "*_AUTH", "*_AUTH_*", "AUTH_*", "*AUTHTOKEN*", "*AUTHORIZATION*",
	"*OAUTH*", "*SESSION*", "*COOKIE*", "*_DSN", "*CONNECTION_STRING*", "*CONNSTR*", "*WEBHOOK*",
	"AWS_*", "AZURE_*", "GOOGLE_APPLICATION_CREDENTIALS", "GPG_AGENT_INFO",
	/* what a token is called by the tools that take one: SONAR_LOGIN,
	 * NUGET_CREDS, VAULT_AUTH_X, REQUEST_SIG, COOKIE_SALT */
	"*_LOGIN", "*_LOGIN_*", "*_CRED", "*_CREDS", "*_CRED_*", "*_CREDS_*", "*AUTH*", "*_SIG",
	"*_SIGNATURE*", "*_SALT", "*_SALT_*",
};

/* Ordinary variables a name above would catch (their values are still
 * looked at). */
static const char *const ordinary_names[] = {
	"XDG_SESSION_*", "DESKTOP_SESSION", "DBUS_SESSION_BUS_ADDRESS", "SESSION_MANAGER",
	"*AUTHOR", "*AUTHOR_*", "*AUTHORS*", /* GIT_AUTHOR_NAME: "*AUTH*" */
	"GIT_CONFIG_KEY_*", /* "*_KEY_*": a config key names a setting; its value is judged by it */
};

/* Names under which a long random-looking value is a credential, whatever
 * the rest of the name says (substrings, case-insensitive). */
static const char *const credential_words[] = {
	"TOKEN", "KEY", "LOGIN", "AUTH", "PASS", "SECRET", "CRED",
};

/* Well-known token prefixes: a prefix at the start of a word, followed by
 * at least min characters of [A-Za-z0-9_.-] of which one is a digit. */
static const struct {
	const char *prefix;
	unsigned min;
} token_prefixes[] = {
	{"ghp_", 30},     {"gho_", 30},     {"ghu_", 30},     {"ghs_", 30},      {"ghr_", 30},
	{"github_pat_", 30}, {"glpat-", 16}, {"gldt-", 16},   {"glrt-", 16},     {"glptt-", 16},
	{"xoxb-", 10},    {"xoxp-", 10},    {"xoxa-", 10},    {"xoxr-", 10},     {"xoxs-", 10},
	{"xoxe-", 10},    {"xapp-", 10},    {"sk-", 20},      {"AKIA", 16},      {"ASIA", 16},
	{"AIza", 30},     {"ya29.", 20},    {"npm_", 30},     {"pypi-", 40},     {"hf_", 30},
	{"sk_live_", 16}, {"rk_live_", 16}, {"sk_test_", 16}, {"rk_test_", 16},  {"whsec_", 16},
	{"SG.", 40},      {"dop_v1_", 40},  {"doo_v1_", 40},  {"dor_v1_", 40},   {"shpat_", 20},
	{"shpss_", 20},   {"glsa_", 20},    {"glc_", 20},     {"hvs.", 20},      {"hvb.", 20},
	{"dckr_pat_", 20}, {"gsk_", 30},    {"xai-", 30},     {"AGE-SECRET-KEY-1", 20},
	{"ATATT", 20},    {"lin_api_", 20}, {"figd_", 20},    {"rubygems_", 20}, {"pul-", 30},
	{"atlasv1.", 30},
};

/* Parameters of connection strings and query strings that carry a secret
 * (password=..., Pwd=..., AccountKey=..., sig=...). */
static const char *const secret_params[] = {
	"password", "passwd", "pwd", "pass", "secret", "token", "apikey", "key", "accountkey",
	"sharedaccesskey", "sig", "authtoken", /* not "auth": MAKEFLAGS=--jobserver-auth=3,4 */
};

/* Secrets in a URL path. */
static const char *const secret_url_parts[] = {
	"hooks.slack.com/services/", "discord.com/api/webhooks/", "discordapp.com/api/webhooks/",
};

static bool word_start(const char *v, const char *p)
{
	return p == v || !isalnum((unsigned char)p[-1]);
}

static bool token_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.';
}

static bool has_token_prefix(const char *v)
{
	for (const char *p = v; *p; p++) {
		if (!word_start(v, p))
			continue;
		for (size_t i = 0; i < ARRAY_SIZE(token_prefixes); i++) {
			size_t n = strlen(token_prefixes[i].prefix);
			if (strncmp(p, token_prefixes[i].prefix, n) != 0)
				continue;
			size_t len = 0;
			bool digit = false;
			for (const char *t = p + n; token_char(*t); t++, len++)
				digit |= isdigit((unsigned char)*t) != 0;
			if (len >= token_prefixes[i].min && digit)
				return true;
		}
	}
	return false;
}

/* The length of the first URL's userinfo at or after v (scheme://user@),
 * with *password set when it holds one (user:password@); -1 if none. */
static long url_userinfo(const char **v, bool *password)
{
	for (const char *p = strstr(*v, "://"); p; p = strstr(p + 3, "://")) {
		const char *auth = p + 3;
		size_t n = strcspn(auth, "/?# \t\n");
		const char *at = memrchr(auth, '@', n);
		if (!at)
			continue;
		const char *colon = memchr(auth, ':', (size_t)(at - auth));
		*password = colon && colon + 1 < at;
		*v = at + 1;
		return at - auth;
	}
	return -1;
}

/* scheme://user:password@host, or a token as the user
 * (https://<40 characters>@github.com: a user name is short). */
static bool url_has_password(const char *v)
{
	bool password;
	for (long n; (n = url_userinfo(&v, &password)) >= 0;)
		if (password || n >= 20)
			return true;
	return false;
}

static bool url_has_userinfo(const char *v)
{
	bool password;
	return url_userinfo(&v, &password) > 0;
}

/* HTTP credentials as header text: "Authorization: ..." (git's
 * http.extraheader), or an auth scheme followed by a credential-looking
 * word ("Bearer <token>", "Basic <base64>"). */
static const char *const auth_schemes[] = {"bearer", "basic", "token", "digest"};

static bool has_auth_header(const char *v)
{
	for (const char *p = v; *p; p++) {
		if (!word_start(v, p) || !isalpha((unsigned char)*p))
			continue;
		if (!strncasecmp(p, "authorization:", 14))
			return true;
		for (size_t i = 0; i < ARRAY_SIZE(auth_schemes); i++) {
			size_t n = strlen(auth_schemes[i]);
			if (strncasecmp(p, auth_schemes[i], n) || (p[n] != ' ' && p[n] != '\t'))
				continue;
			const char *q = p + n + strspn(p + n, " \t");
			size_t len = 0, digits = 0;
			for (; token_char(q[len]) || (q[len] && strchr("+/=~", q[len])); len++)
				digits += isdigit((unsigned char)q[len]) != 0;
			if (len >= 16 && digits)
				return true;
		}
	}
	return false;
}

static bool has_secret_param(const char *v)
{
	for (const char *p = v; *p; p++) {
		if (!word_start(v, p) || !isalpha((unsigned char)*p))
			continue;
		for (size_t i = 0; i < ARRAY_SIZE(secret_params); i++) {
			size_t n = strlen(secret_params[i]);
			if (!strncasecmp(p, secret_params[i], n) && p[n] == '=' && p[n + 1] &&
			    !strchr(";& \t\n", p[n + 1]))
				return true;
		}
	}
	return false;
}

/* header.payload.signature, both first parts base64url JSON ("eyJ"). */
static bool has_jwt(const char *v)
{
	for (const char *p = strstr(v, "eyJ"); p; p = strstr(p + 3, "eyJ")) {
		if (!word_start(v, p))
			continue;
		const char *q = p;
		size_t seg = 0, dots = 0;
		for (; isalnum((unsigned char)*q) || *q == '_' || *q == '-' || *q == '.'; q++) {
			if (*q != '.') {
				seg++;
				continue;
			}
			if (seg < 8)
				break;
			dots++, seg = 0;
		}
		if (dots >= 2)
			return true;
	}
	return false;
}

static bool text_secret(const char *v)
{
	if (strstr(v, "-----BEGIN") && strstr(v, "PRIVATE KEY"))
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(secret_url_parts); i++)
		if (strstr(v, secret_url_parts[i]))
			return true;
	return url_has_password(v) || has_secret_param(v) || has_token_prefix(v) || has_jwt(v) || has_auth_header(v);
}

static int base64_digit(unsigned char c)
{
	if (isupper(c))
		return c - 'A';
	if (islower(c))
		return c - 'a' + 26;
	if (isdigit(c))
		return c - '0' + 52;
	return c == '+' || c == '-' ? 62 : c == '/' || c == '_' ? 63 : -1;
}

/* Credentials in structured text (a kubeconfig, a docker config.json). */
static const char *const decoded_secret_words[] = {
	"token:", "password:", "client-key-data", "\"auth\":", "\"password\":", "\"token\":", "secret:",
};

/* v is base64 (either alphabet) of text holding a credential
 * (KUBE_CONFIG_DATA, DOCKER_AUTH_CONFIG-like values under other names). */
static bool base64_secret(const char *v)
{
	size_t n = strlen(v);
	if (n < 24 || n > (4u << 20))
		return false;
	_cleanup_free_ char *d = malloc(n / 4 * 3 + 4);
	if (!d)
		return true; /* fail closed */
	size_t len = 0;
	unsigned acc = 0, bits = 0;
	for (const unsigned char *p = (const unsigned char *)v; *p && *p != '='; p++) {
		int x = base64_digit(*p);
		if (x < 0)
			return false;
		acc = (acc << 6) | (unsigned)x, bits += 6;
		if (bits >= 8) {
			bits -= 8;
			char c = (char)((acc >> bits) & 0xff);
			d[len++] = c ? c : ' ';
		}
	}
	d[len] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(decoded_secret_words); i++)
		if (strcasestr(d, decoded_secret_words[i]))
			return true;
	return text_secret(d);
}

static bool value_secret(const char *v)
{
	return text_secret(v) || base64_secret(v);
}

/* git's configuration from the environment (GIT_CONFIG_COUNT,
 * GIT_CONFIG_KEY_N, GIT_CONFIG_VALUE_N): a value is a secret by the key
 * it sets (http.extraheader, credential.*, a URL with a user in it). */
static bool git_config_value_secret(const char *name, const char *value, const char *const *envp)
{
	static const char prefix[] = "GIT_CONFIG_VALUE_";
	size_t n = sizeof prefix - 1;
	if (strncmp(name, prefix, n) || !name[n] || strspn(name + n, "0123456789") != strlen(name + n))
		return false;
	char keyvar[64];
	if (snprintf(keyvar, sizeof keyvar, "GIT_CONFIG_KEY_%s", name + n) >= (int)sizeof keyvar)
		return true;
	const char *key = env_value(envp, keyvar);
	if (!key)
		return false;
	if (!fnmatch("*.extraheader", key, FNM_CASEFOLD) || !fnmatch("credential.*", key, FNM_CASEFOLD) ||
	    !fnmatch("credential", key, FNM_CASEFOLD))
		return true;
	return (!fnmatch("*url", key, FNM_CASEFOLD) || !fnmatch("*.insteadof", key, FNM_CASEFOLD) ||
		!fnmatch("*proxy", key, FNM_CASEFOLD)) && url_has_userinfo(value);
}

/* fnmatch(glob, up, 0) for the built-in globs (upper case, '*' only at
 * either end): an affix or substring compare, without fnmatch's cost. */
static bool affix_match(const char *glob, const char *up, size_t ulen)
{
	size_t gl = strlen(glob);
	bool lead = glob[0] == '*', trail = gl > 1 && glob[gl - 1] == '*';
	const char *core = glob + lead;
	size_t cl = gl - lead - trail;
	if (memchr(core, '*', cl) || memchr(core, '?', cl) || memchr(core, '[', cl))
		return fnmatch(glob, up, 0) == 0;
	if (lead && trail)
		return memmem(up, ulen, core, cl) != NULL;
	if (lead)
		return ulen >= cl && !memcmp(up + ulen - cl, core, cl);
	if (trail)
		return ulen >= cl && !memcmp(up, core, cl);
	return ulen == cl && !memcmp(up, core, cl);
}

/* github_token is GITHUB_TOKEN: matched case-insensitively. */
static bool name_matches(const char *name, const char *const *globs, size_t n)
{
	char up[256];
	size_t ulen = strlen(name);
	if (ulen >= sizeof up) {
		for (size_t i = 0; i < n; i++)
			if (fnmatch(globs[i], name, FNM_CASEFOLD) == 0)
				return true;
		return false;
	}
	for (size_t i = 0; i <= ulen; i++)
		up[i] = (char)toupper((unsigned char)name[i]);
	for (size_t i = 0; i < n; i++)
		if (affix_match(globs[i], up, ulen))
			return true;
	return false;
}

/* The policy's env_deny on a name: 1 drop (a glob matches), -1 keep (only
 * a "!glob" matches: kept whatever the built-in rules say), 0 neither. */
static int policy_env_rule(const char *name, const char *const *deny)
{
	int verdict = 0;
	for (const char *const *g = deny; g && *g; g++) {
		bool keep = (*g)[0] == '!';
		if (fnmatch(*g + keep, name, FNM_CASEFOLD) != 0)
			continue;
		if (!keep)
			return 1;
		verdict = -1;
	}
	return verdict;
}

/* A value that looks like a generated key: at least 32 characters, all of
 * the base64 / hex / base64url alphabet, mixing digits and letters. Paths
 * and URLs are not (they hold '/' or ':' between words, and a URL's
 * password is caught by url_has_password). */
static bool random_looking(const char *v)
{
	size_t n = 0, digits = 0, alpha = 0;
	for (const char *p = v; *p; p++, n++) {
		unsigned char c = (unsigned char)*p;
		if (isdigit(c))
			digits++;
		else if (isalpha(c))
			alpha++;
		else if (!strchr("+/=_-.", c))
			return false;
	}
	if (n < 32 || v[0] == '/' || v[0] == '.' || strstr(v, "//"))
		return false;
	return digits >= 2 && alpha >= 8;
}

static bool credential_name(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(credential_words); i++)
		if (strcasestr(name, credential_words[i]))
			return true;
	return false;
}

/* The entry NAME=VALUE of envp carries a secret: by its name (the
 * policy's globs, the built-in ones) or by its value. */
static bool entry_secret(const char *entry, size_t namelen, const char *const *deny, const char *const *envp)
{
	_cleanup_free_ char *name = strndup(entry, namelen);
	if (!name)
		return true; /* fail closed */
	int rule = policy_env_rule(name, deny);
	if (rule)
		return rule > 0;
	if (name_matches(name, secret_names, ARRAY_SIZE(secret_names)) &&
	    !name_matches(name, ordinary_names, ARRAY_SIZE(ordinary_names)))
		return true;
	const char *value = entry + namelen + 1;
	return value_secret(value) || (credential_name(name) && random_looking(value)) ||
	       git_config_value_secret(name, value, envp);
}

void secrets_env_free(char **env)
{
	if (!env)
		return;
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
}

char **secrets_filter_env(char *const *envp, const char *const *deny, txbox_error *err)
{
	size_t n = 0;
	for (char *const *e = envp; e && *e; e++)
		n++;
	char **out = calloc(n + 1, sizeof(*out));
	if (!out) {
		txbox_fail(err, -ENOMEM, "secrets: out of memory filtering the environment");
		return NULL;
	}
	size_t k = 0;
	for (char *const *e = envp; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (!eq || eq == *e)
			continue; /* malformed: no name or no '=' */
		if (entry_secret(*e, (size_t)(eq - *e), deny, (const char *const *)envp))
			continue;
		out[k] = strdup(*e);
		if (!out[k]) {
			secrets_env_free(out);
			txbox_fail(err, -ENOMEM, "secrets: out of memory filtering the environment");
			return NULL;
		}
		k++;
	}
	out[k] = NULL;
	return out;
}
