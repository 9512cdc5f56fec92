# collagec.bash - bash completion for collagec: subcommands, each one's
# options, the values of --target (comma lists of kinds), --search and
# --estimator, and file names: .onnx models for compile, compiled .so for
# run, bench and explain, directories for conformance. `make install`
# installs it as PREFIX/share/bash-completion/completions/collagec; or
# source it. Needs no bash-completion package. tests/examples.sh checks
# that every option `collagec CMD --help` shows is completed here.

_collagec_files()	# _collagec_files EXT: files ending in .EXT, and directories
{
	compopt -o filenames 2>/dev/null
	# mapfile: names with spaces or glob characters stay whole
	mapfile -t COMPREPLY < <(compgen -f -X "!*.$1" -- "$cur"; compgen -d -- "$cur")
}

_collagec_dirs()
{
	compopt -o filenames 2>/dev/null
	mapfile -t COMPREPLY < <(compgen -d -- "$cur")
}

_collagec_any_file()
{
	compopt -o filenames 2>/dev/null
	mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}

_collagec()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local cmd=${COMP_WORDS[1]} opts kinds="c lapack blas dnnl opencl cuda cublas cudnn"

	COMPREPLY=()
	if ((COMP_CWORD == 1)); then
		COMPREPLY=($(compgen -W "compile run bench conformance targets explain cache
			--help --version" -- "$cur"))
		return
	fi
	# --json takes a FILE only in compile; elsewhere it is a flag
	[ "$prev" = --json ] && [ "$cmd" != compile ] && prev=
	case $prev in
	--target)
		# a comma list: complete the kind after the last comma
		local done=${cur%"${cur##*,}"}
		COMPREPLY=($(compgen -P "$done" -W "$kinds" -- "${cur##*,}"))
		compopt -o nospace 2>/dev/null
		return ;;
	--search) COMPREPLY=($(compgen -W "collage greedy none" -- "$cur")); return ;;
	--estimator) COMPREPLY=($(compgen -W "measure analytic mock" -- "$cur")); return ;;
	--cpu)
		COMPREPLY=($(compgen -W "native x86-64-v2 x86-64-v3 x86-64-v4 generic" -- "$cur"))
		return ;;
	-o | --output)
		if [ "$cmd" = compile ]; then _collagec_files so; else _collagec_any_file; fi
		return ;;
	--model) _collagec_files onnx; return ;;
	--depfile | --stats | --json | --weights | --cache | --patterns | --expect | --baseline | --dot | --input | --cc)
		_collagec_any_file
		return ;;
	--dump-ir | --output-dir | --check | --source) _collagec_dirs; return ;;
	--html) _collagec_any_file; return ;;
	# explain --profile FILE; bench --profile takes nothing
	--profile) [ "$cmd" = explain ] && { _collagec_any_file; return; } ;;
	# values to type: nothing to offer
	--shape | --tune-shape | --elements | --prefix | --threads | -j | --jobs | --max-depth | --opt | \
		--seed | --rtol | --atol | --runs | --warmup | --max-regression | --timeout | --older-than | --version)
		return ;;
	esac
	case $cmd in
	compile)
		opts="-o --output --target --search --max-depth --estimator --cache --no-cache
			--no-plan-check --search-budget --threads -j --jobs --progress --patterns --shape
			--tune-shape --elements --dump-ir --depfile --stats --prefix --json --weights --cc --opt --cpu
			--keep-temps -q --quiet -v --verbose
			--help" ;;
	run)
		opts="--input --shape --seed --output-dir --npy --check --rtol --atol --threads
			--kernels --help" ;;
	bench)
		opts="--runs --warmup --threads --shape --seed --json --profile --baseline
			--max-regression --help" ;;
	conformance)
		opts="--target --patterns --rtol --atol -j --jobs --timeout --opt --cpu --expect
			--json -q --quiet --help" ;;
	targets) opts="--patterns --help" ;;
	explain) opts="--json --dot --html --profile --source --model --help" ;;
	cache)
		if ((COMP_CWORD == 2)); then
			COMPREPLY=($(compgen -W "stats export import clear --help" -- "$cur"))
			return
		fi
		opts="--cache -o --output --older-than --version --help" ;;
	*) return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
		return
	fi
	case $cmd in
	compile) _collagec_files onnx ;;
	run | bench | explain) _collagec_files so ;;
	conformance) _collagec_dirs ;;
	cache) [ "${COMP_WORDS[2]}" = import ] && _collagec_any_file ;;
	esac
}
complete -F _collagec collagec
