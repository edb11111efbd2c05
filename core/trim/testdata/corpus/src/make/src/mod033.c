#include <stdio.h>

int mod033(int x)
{
    return x + 33;
}
