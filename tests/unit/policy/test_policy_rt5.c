/* The default policy against the red team's (rt5) findings: remote-harm
 * CLIs that had no rule are held or denied with their own reason (a word
 * known only at run time holds only when the network is granted), and the
 * false positives are allowed or given a true reason. Also the "!glob"
 * exclusions of path conditions those rules use. */
#include "policy/policy.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "want.h"

static const policy_ctx ctx = {.workspace = "/work/ws", .cwd = "/work/ws", .home = "/home/agent"};

/* Remote harm is judged the same with and without --net when resolved. */
static void test_remote_harm(void **state)
{
	(void)state;
	static const want t[] = {
		{"gh repo delete owner/repo --yes", POLICY_DENY, "forge-repo-delete", "hosted repository"},
		{"glab repo delete group/proj --yes", POLICY_DENY, "forge-repo-delete", NULL},
		{"gh release delete v1.0 -y", POLICY_HOLD, "forge-delete", "deletes or archives"},
		{"gh secret delete MY_SECRET", POLICY_HOLD, "forge-delete", NULL},
		{"glab variable delete X", POLICY_HOLD, "forge-delete", NULL},
		{"gh repo archive o/r -y", POLICY_HOLD, "forge-delete", NULL},
		{"gh api -X DELETE repos/owner/repo", POLICY_HOLD, "forge-api-write", "DELETE, PATCH or PUT"},
		{"gh api --method DELETE repos/owner/repo", POLICY_HOLD, "forge-api-write", NULL},
		{"gh api --method=delete repos/o/r", POLICY_HOLD, "forge-api-write", NULL},
		{"gh api -XDELETE repos/owner/repo", POLICY_HOLD, "forge-api-write", NULL},
		{"gh api -X PATCH repos/o/r -f archived=true", POLICY_HOLD, "forge-api-write", NULL},
		{"gh api -X PUT repos/o/r/branches/main/protection", POLICY_HOLD, "forge-api-write", NULL},
		{"glab api -X DELETE projects/1", POLICY_HOLD, "forge-api-write", NULL},
		{"rclone purge remote:bucket", POLICY_DENY, "rclone-purge", "everything in it"},
		{"rclone delete remote:bucket/path", POLICY_HOLD, "rclone-delete", NULL},
		{"rclone sync ./dist remote:bucket", POLICY_HOLD, "rclone-sync-remote", "deleting at the destination"},
		{"rclone bisync ./a remote:", POLICY_HOLD, "rclone-sync-remote", NULL},
		{"rclone sync remote:a /srv/x", POLICY_HOLD, "rclone-sync-remote", NULL},
		{"ansible all -m shell -a 'rm -rf /tmp/x'", POLICY_HOLD, "ansible-adhoc", "remote hosts"},
		{"ansible web -m raw -a reboot", POLICY_HOLD, "ansible-adhoc", NULL},
		{"ansible all --args=uptime", POLICY_HOLD, "ansible-adhoc", NULL},
		{"pdsh -w node[1-10] uptime", POLICY_HOLD, "remote-shell-many-hosts", NULL},
		{"pssh -h hosts.txt -i uptime", POLICY_HOLD, "remote-shell-many-hosts", NULL},
		{"clush -w node[1-5] 'systemctl stop app'", POLICY_HOLD, "remote-shell-many-hosts", NULL},
		{"etcdctl del --prefix /", POLICY_DENY, "kv-delete-all", "whole prefix"},
		{"etcdctl del key", POLICY_HOLD, "kv-delete", NULL},
		{"consul kv delete -recurse app/", POLICY_DENY, "kv-delete-all", NULL},
		{"consul kv delete app/x", POLICY_HOLD, "kv-delete", NULL},
		{"mc rb --force myminio/bucket", POLICY_DENY, "minio-remove", NULL},
		{"mc rm --recursive --force myminio/bucket", POLICY_DENY, "minio-remove", NULL},
		{"mc rm myminio/bucket/obj", POLICY_HOLD, "minio-remove-object", NULL},
		{"terragrunt destroy", POLICY_DENY, "terraform-destroy", NULL},
		{"terragrunt run-all destroy", POLICY_DENY, "terraform-destroy", NULL},
		{"terragrunt run-all apply -destroy", POLICY_DENY, "terraform-apply-destroy", NULL},
		{"terragrunt apply -destroy", POLICY_DENY, "terraform-apply-destroy", NULL},
		{"kafka-topics --bootstrap-server b:9092 --delete --topic t", POLICY_DENY, "kafka-delete", NULL},
		{"kafka-topics.sh --bootstrap-server b:9092 --delete --topic t", POLICY_DENY, "kafka-delete", NULL},
		{"eksctl delete cluster --name prod", POLICY_DENY, "eksctl-delete", NULL},
		{"busctl call org.freedesktop.login1 /org/freedesktop/login1 "
		 "org.freedesktop.login1.Manager PowerOff b false",
		 POLICY_DENY, "dbus-power-off", "power off"},
		{"dbus-send --system --print-reply --dest=org.freedesktop.login1 /org/freedesktop/login1 "
		 "org.freedesktop.login1.Manager.Reboot boolean:true",
		 POLICY_DENY, "dbus-power-off", NULL},
		{"gdbus call --system --dest org.freedesktop.login1 --object-path /org/freedesktop/login1 "
		 "--method org.freedesktop.login1.Manager.PowerOff true",
		 POLICY_DENY, "dbus-power-off", NULL},
		{"git clone https://user:ghp_abc123@github.com/o/r.git", POLICY_HOLD, "credential-in-url",
		 "password or token in a URL"},
		{"git push https://x-access-token:T0K3N@github.com/o/r.git main", POLICY_HOLD,
		 "credential-in-url", NULL},
		/* what stays ordinary */
		{"gh api repos/owner/repo", POLICY_ALLOW, "default", NULL},
		{"gh api -X GET repos/o/r/pulls", POLICY_ALLOW, "default", NULL},
		{"gh release create v1.0", POLICY_ALLOW, "default", NULL},
		{"gh alias delete co", POLICY_ALLOW, "forge-local-settings", NULL},
		{"rclone copy ./dist remote:bucket", POLICY_ALLOW, "default", NULL},
		{"rclone sync remote:site ./public", POLICY_ALLOW, "default", NULL},
		{"ansible all -m ping", POLICY_ALLOW, "default", NULL},
		{"ansible-playbook -i hosts site.yml", POLICY_ALLOW, "default", NULL},
		{"etcdctl get key", POLICY_ALLOW, "default", NULL},
		{"terragrunt plan", POLICY_ALLOW, "default", NULL},
		{"kafka-topics --list --bootstrap-server b:9092", POLICY_ALLOW, "default", NULL},
		{"busctl call org.freedesktop.login1 /org/freedesktop/login1 "
		 "org.freedesktop.login1.Manager CanReboot",
		 POLICY_ALLOW, "default", NULL},
		{"git clone https://github.com/o/r.git", POLICY_ALLOW, "default", NULL},
		{"git clone ssh://git@example.com:2222/o/r.git", POLICY_ALLOW, "default", NULL},
	};
	policy *p = load_default();
	policy_ctx net = ctx;
	net.network = true;
	EXPECT_ALL(p, &ctx, t);
	EXPECT_ALL(p, &net, t);
	policy_free(p);
}

/* A value known only at run time: the sandbox contains it without the
 * network; with --net it holds, naming the word, not the rule's label. */
static void test_remote_harm_unknown(void **state)
{
	(void)state;
	static const want off[] = {
		{"rclone sync ./dist \"$DEST\"", POLICY_ALLOW, "default", NULL},
		{"gh api -X \"$M\" repos/o/r", POLICY_ALLOW, "default", NULL},
		{"git clone \"https://x:${TOKEN}@github.com/o/r\"", POLICY_ALLOW, "default", NULL},
		{"kubectl scale deploy x --replicas=$N", POLICY_ALLOW, "default", NULL},
	};
	static const want on[] = {
		{"rclone sync ./dist \"$DEST\"", POLICY_HOLD, "unresolved", "$DEST cannot be resolved"},
		{"gh api -X \"$M\" repos/o/r", POLICY_HOLD, "unresolved", "$M cannot be resolved"},
		/* a token from the environment: the sandbox strips it */
		{"git clone \"https://x:${TOKEN}@github.com/o/r\"", POLICY_ALLOW, "default", NULL},
		/* no other word stands for "delete" or a credential */
		{"gh pr merge --auto --merge \"$PR_URL\"", POLICY_ALLOW, "default", NULL},
		{"gh issue close $ISSUE_URL --reason completed", POLICY_ALLOW, "default", NULL},
		{"gh api repos/${repo}/contents/x", POLICY_ALLOW, "default", NULL},
		{"gh release create --draft --repo ${GITHUB_REPOSITORY} ${GITHUB_REF_NAME} dist/x",
		 POLICY_ALLOW, "default", NULL},
		{"git config user.name \"${GITHUB_ACTOR}\"", POLICY_ALLOW, "default", NULL},
		{"git clone --depth=1 \"${REMOTE_REPO}\" site/", POLICY_ALLOW, "default", NULL},
		{"kubectl scale deploy x --replicas=$N", POLICY_HOLD, "unresolved", "kubectl-scale-to-zero"},
	};
	policy *p = load_default();
	policy_ctx net = ctx;
	net.network = true;
	EXPECT_ALL(p, &ctx, off);
	EXPECT_ALL(p, &net, on);
	policy_free(p);
}

static void test_false_positives(void **state)
{
	(void)state;
	static const want t[] = {
		/* signal 0 only tests that a process exists */
		{"kill -0 1", POLICY_ALLOW, "default", NULL},
		{"kill -0 -1", POLICY_ALLOW, "default", NULL},
		{"kill -s 0 1", POLICY_ALLOW, "default", NULL},
		{"kill -s0 1", POLICY_ALLOW, "default", NULL},
		{"kill -n 0 1", POLICY_ALLOW, "default", NULL},
		{"kill --signal=0 1", POLICY_ALLOW, "default", NULL},
		{"kill --signal 0 1", POLICY_ALLOW, "default", NULL},
		{"kill -s 0 -s 9 1", POLICY_DENY, "kill-all-processes-pid", NULL},
		{"kill -s 0 -9 1", POLICY_DENY, "kill-all-processes-pid", NULL},
		{"kill -s 9 1", POLICY_DENY, "kill-all-processes-pid", NULL},
		{"kill 1", POLICY_DENY, "kill-all-processes-pid", NULL},
		{"kill -9 -1", POLICY_DENY, "kill-all-processes", NULL},
		/* sparse files hold no data; head copies no more than its file */
		{"truncate -s 10G file", POLICY_ALLOW, "default", NULL},
		{"qemu-img create x.img 20G", POLICY_ALLOW, "default", NULL},
		{"qemu-img create -f qcow2 x.qcow2 20G", POLICY_ALLOW, "default", NULL},
		{"qemu-img create -o preallocation=full x.img 20G", POLICY_HOLD,
		 "disk-fill-size-preallocated", NULL},
		{"fallocate -l 10G file", POLICY_HOLD, "disk-fill-size", NULL},
		{"head -n 1000000 file", POLICY_ALLOW, "default", NULL},
		{"head -n 100000000000 big.log > out.txt", POLICY_ALLOW, "default", NULL},
		{"yes | head -n 100000000000 > out.txt", POLICY_HOLD, "disk-fill-size-stream", NULL},
		{"head -c 20G /dev/zero > f", POLICY_HOLD, "disk-fill-size-device", NULL},
		{"head -c20G /dev/urandom > f", POLICY_HOLD, "disk-fill-size-device", NULL},
		/* public keys and listing names are no secrets */
		{"cat ~/.ssh/id_ed25519.pub", POLICY_ALLOW, "default", NULL},
		{"cat < ~/.ssh/id_rsa.pub", POLICY_ALLOW, "default", NULL},
		{"ls ~/.ssh", POLICY_ALLOW, "default", NULL},
		{"ls -la ~/.ssh/", POLICY_ALLOW, "default", NULL},
		{"test -f ~/.ssh/id_rsa", POLICY_ALLOW, "default", NULL},
		{"cat ~/.ssh/id_ed25519", POLICY_DENY, "read-secrets", NULL},
		{"cat ~/.ssh/*", POLICY_DENY, "read-secrets", NULL},
		{"cat ~/.ssh/id_rsa.pub ~/.ssh/id_rsa", POLICY_DENY, "read-secrets", "/home/agent/.ssh/id_rsa)"},
		{"cat < ~/.ssh/id_rsa", POLICY_DENY, "read-secrets-redirect", NULL},
		{"tar czf k.tgz ~/.ssh", POLICY_DENY, "read-secrets", NULL},
		/* names ls prints are what xargs feeds on */
		{"ls ~/.ssh | xargs cat", POLICY_DENY, "read-secrets", NULL},
		{"ls -d ~/.ssh/* | xargs cat", POLICY_DENY, "read-secrets", NULL},
		{"ls *.txt | xargs wc -l", POLICY_ALLOW, "default", NULL},
		/* host keys are no persistence; authorized_keys and config are */
		{"ssh-keyscan github.com >> ~/.ssh/known_hosts", POLICY_DENY, "redirect-outside",
		 "writes outside the workspace"},
		{"echo 'ssh-ed25519 AAAA x' >> ~/.ssh/authorized_keys", POLICY_DENY, "persistence-redirect", NULL},
		{"echo x >> ~/.ssh/config", POLICY_DENY, "persistence-redirect", NULL},
		/* only scaling to zero stops a workload */
		{"kubectl scale deploy x --replicas=3", POLICY_ALLOW, "default", NULL},
		{"kubectl scale deploy x --replicas 3", POLICY_ALLOW, "default", NULL},
		{"kubectl scale deploy x --replicas=0", POLICY_HOLD, "kubectl-scale-to-zero", "zero replicas"},
		{"kubectl scale --replicas 0 deployment/x", POLICY_HOLD, "kubectl-scale-to-zero", NULL},
		{"kubectl delete pod x", POLICY_HOLD, "kubectl-delete", NULL},
		/* git's subcommand is no file: the reason names the directory */
		{"git -C ~/.ssh init", POLICY_DENY, "git-in-secret-dir", "(/home/agent/.ssh)"},
		{"git init ~/.ssh", POLICY_DENY, "git-in-secret-dir", "(/home/agent/.ssh)"},
		{"git -C ~/.ssh add .", POLICY_DENY, "git-in-secret-dir", NULL},
		{"git -C /tmp/x init", POLICY_ALLOW, "default", NULL},
		{"git rm -f ~/.bashrc", POLICY_DENY, "persistence-write", "(/home/agent/.bashrc)"},
	};
	policy *p = load_default();
	EXPECT_ALL(p, &ctx, t);
	policy_free(p);
}

/* "!glob" excludes a path from the whole condition, classes included; a
 * pattern word may still reach what is not excluded. */
static void test_path_exclusions(void **state)
{
	(void)state;
	static const char text[] =
		"version: 1\nrules:\n"
		"  - {id: sec, decision: deny, reason: secret,\n"
		"     match: {paths: [\"~/.ssh\", \"~/.ssh/*\", \"!~/.ssh/*.pub\"]}}\n"
		"  - {id: home, decision: hold, reason: home, match: {command: cp,\n"
		"     dest: [home, \"!~/keep/*\"]}}\n";
	static const want t[] = {
		{"cat ~/.ssh/id_rsa", POLICY_DENY, "sec", NULL},
		{"cat ~/.ssh/id_rsa.pub", POLICY_ALLOW, "default", NULL},
		{"cat ~/.ssh/*.pub", POLICY_DENY, "sec", NULL},
		{"cat ~/.ssh", POLICY_DENY, "sec", NULL},
		{"cp a ~/x", POLICY_HOLD, "home", NULL},
		{"cp a ~/keep/x", POLICY_ALLOW, "default", NULL},
	};
	policy *p = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	if (policy_load_buffer("excl", text, strlen(text), &p, &err) < 0)
		fail_msg("%s", err.message);
	EXPECT_ALL(p, &ctx, t);
	policy_free(p);

	static const char bad[] = "version: 1\nrules:\n"
				  "  - {id: x, decision: deny, reason: r, match: {paths: [\"!tmp\"]}}\n";
	assert_true(policy_load_buffer("bad", bad, strlen(bad), &p, &err) < 0);
	assert_non_null(strstr(err.message, "to exclude it"));
	txbox_error_clear(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_remote_harm),
		cmocka_unit_test(test_remote_harm_unknown),
		cmocka_unit_test(test_false_positives),
		cmocka_unit_test(test_path_exclusions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
