#include <stdio.h>

int mod145(int x)
{
    return x + 145;
}
