/*
 * tls.c — `tir serve --tls-cert FILE --tls-key FILE`: the two PEM files
 * read and checked before the server starts, so that a wrong file is an
 * error that names it (libmicrohttpd, given them, would only fail to
 * start).  OpenSSL's libcrypto, already lib/net's, reads them; GnuTLS,
 * inside libmicrohttpd, serves with them.
 */
#include "serve.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PEM_MAX ((long)1 << 20) /* a certificate chain or a key is a few KiB */

/* The whole of a small file, NUL-terminated; NULL with err set. */
static char *slurp(const char *flag, const char *path, struct tir_err *err)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		tir_errf(err, TIR_EDATA, NULL, "%s %s: %s", flag, path, strerror(errno));
		return NULL;
	}
	char *buf = malloc(PEM_MAX + 1);
	size_t n = buf ? fread(buf, 1, PEM_MAX + 1, f) : 0;
	bool bad = ferror(f);
	fclose(f);
	if (!buf) {
		tir_errf(err, TIR_ENOMEM, NULL, "out of memory");
	} else if (bad) {
		tir_errf(err, TIR_EDATA, NULL, "%s %s: cannot be read", flag, path);
	} else if (n > (size_t)PEM_MAX) {
		tir_errf(err, TIR_EDATA, NULL, "%s %s: over %ld KiB; not a PEM file", flag, path, PEM_MAX >> 10);
	} else {
		buf[n] = 0;
		return buf;
	}
	free(buf);
	return NULL;
}

/* A passphrase asked for: there is none (an encrypted key is refused). */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf, (void)size, (void)rwflag, (void)u;
	return -1;
}

int tir_tls_load(const char *cert_path, const char *key_path, char **cert_pem, char **key_pem,
		 struct tir_err *err)
{
	*cert_pem = *key_pem = NULL;
	char *cert = slurp("--tls-cert", cert_path, err);
	if (!cert)
		return -err->code;
	char *key = slurp("--tls-key", key_path, err);
	if (!key) {
		free(cert);
		return -err->code;
	}
	int rc = 0;
	X509 *x = NULL;
	EVP_PKEY *k = NULL;
	BIO *b = BIO_new_mem_buf(cert, -1);
	x = b ? PEM_read_bio_X509(b, NULL, no_passphrase, NULL) : NULL;
	BIO_free(b);
	if (!x) {
		rc = tir_errf(err, TIR_EDATA, NULL, "--tls-cert %s: no PEM certificate in it", cert_path);
		goto out;
	}
	b = BIO_new_mem_buf(key, -1);
	k = b ? PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL) : NULL;
	BIO_free(b);
	if (!k) {
		rc = tir_errf(err, TIR_EDATA, NULL,
			      "--tls-key %s: no PEM private key in it (an encrypted key needs its passphrase "
			      "removed: openssl pkey -in KEY -out KEY2)", key_path);
		goto out;
	}
	if (X509_check_private_key(x, k) != 1) {
		rc = tir_errf(err, TIR_EDATA, NULL, "--tls-key %s is not the key of --tls-cert %s", key_path,
			      cert_path);
		goto out;
	}
	if (X509_cmp_current_time(X509_get0_notAfter(x)) < 0) {
		rc = tir_errf(err, TIR_EDATA, NULL, "--tls-cert %s: the certificate has expired", cert_path);
		goto out;
	}
	if (X509_cmp_current_time(X509_get0_notBefore(x)) > 0) {
		rc = tir_errf(err, TIR_EDATA, NULL, "--tls-cert %s: the certificate is not valid yet", cert_path);
		goto out;
	}
out:
	ERR_clear_error();
	X509_free(x);
	EVP_PKEY_free(k);
	if (rc) {
		free(cert);
		free(key);
		return rc;
	}
	*cert_pem = cert;
	*key_pem = key;
	return 0;
}
